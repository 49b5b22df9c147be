/**
 * exec/handshake-gate.ts: the runner's own work (a finished shard's
 * verdict, the run's first report) waits for pending handshakes, never
 * longer than its bound. Which attempts count, and that every end of one
 * leaves, is test/shard-attempt.test.ts; a child that never dials in does
 * not hold the first report, test/events-fallback.test.ts. Its effect on a
 * run's time is measured by bench/perf.ts (P3), not here.
 */
import { expect, test } from "bun:test";
import { HandshakeGate } from "../runner/exec/handshake-gate.ts";

/** Whether `promise` has settled after the current macrotask. */
async function settledYet(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

test("nothing pending: the wait ends at once", async () => {
  expect(await settledYet(new HandshakeGate().settled(10_000))).toBe(true);
});

test(
  "the wait ends when the last pending handshake ends, " + "not before; a second end of the same one counts nothing",
  async () => {
    const gate = new HandshakeGate();
    const first = gate.enter();
    const second = gate.enter();
    const waiting = gate.settled(10_000);
    first();
    first();
    expect(await settledYet(waiting)).toBe(false);
    second();
    expect(await settledYet(waiting)).toBe(true);
    // Every end was counted once: nothing is pending now.
    expect(await settledYet(gate.settled(10_000))).toBe(true);
  },
);

test("a handshake that never ends holds a verdict no longer than the bound", async () => {
  const gate = new HandshakeGate();
  gate.enter();
  const t0 = performance.now();
  await gate.settled(30);
  expect(performance.now() - t0).toBeGreaterThanOrEqual(29);
  // Several waits at once each end by their own bound.
  await Promise.all([gate.settled(5), gate.settled(10)]);
});
