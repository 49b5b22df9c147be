/**
 * app/first-wave.ts: when a run's first report is written. Real runs cover
 * it end to end (test/events-fallback.test.ts: a child that never dials in
 * does not hold the first report; test/crash-safety.test.ts: a runner
 * killed mid-run leaves it); these pin the counting.
 */
import { expect, test } from "bun:test";
import { FirstWave } from "../runner/app/first-wave.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("ready once every shard of the first wave runs its tests, once, whatever is counted twice", () => {
  let calls = 0;
  const wave = new FirstWave(2, () => calls++, 60_000);
  const [a, b] = [wave.member(), wave.member()];
  a.spawned();
  a.running();
  a.running();
  b.spawned();
  expect([wave.ready, calls]).toEqual([false, 0]);
  b.running();
  expect([wave.ready, calls]).toEqual([true, 1]);
  // A later shard changes nothing.
  wave.member().running();
  expect(calls).toBe(1);
});

test("a shard that ended without running (failed handshake, cancel) counts as spawned and running", () => {
  let calls = 0;
  const wave = new FirstWave(2, () => calls++, 60_000);
  wave.member().running();
  wave.member().running();
  expect(calls).toBe(1);
});

test("no shard to run: ready at once", () => {
  let calls = 0;
  expect(new FirstWave(0, () => calls++).ready).toBe(true);
  expect(calls).toBe(1);
});

test("a handshake that does not come: ready the bound after the whole wave was spawned, not before it was spawned", async () => {
  let calls = 0;
  const wave = new FirstWave(2, () => calls++, 20);
  const [a, b] = [wave.member(), wave.member()];
  a.spawned();
  await sleep(60);
  // One shard of two spawned: no bound runs yet.
  expect(calls).toBe(0);
  b.spawned();
  await sleep(60);
  expect([wave.ready, calls]).toEqual([true, 1]);
  // The handshakes that come later ask for nothing more.
  a.running();
  b.running();
  expect(calls).toBe(1);
});
