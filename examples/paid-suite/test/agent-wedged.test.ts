/**
 * Failure class: spinning main thread. The second test busy-waits for a flag that only an
 * async callback could set; the callback can never run because the loop never yields, so the
 * loop is as infinite as `while (true) {}`. Bun's per-test --timeout is a timer on the same
 * thread and never fires: only a kill from outside ends this process.
 * Expected shardguard status: timed-out (first test passed, second timed out, third never ran).
 */
import { expect, test } from "bun:test";
import { runAgent, startAgent } from "../helpers/agent.ts";

test("before: agent answers normally", async () => {
  const run = await runAgent("What is 2 + 3?");
  expect(run.result).toBe("5");
});

test("agent session is awaited with a busy-wait", () => {
  const agent = startAgent("What is the capital of France?", { lines: 2 });
  // A property rather than a local, the way such state usually lives on a session object.
  const state = { finished: false };
  void agent.exited.then(() => {
    state.finished = true;
  });
  // The bug: polling instead of awaiting. `state.finished` is set by a promise callback, and
  // promise callbacks only run once this synchronous loop returns, which it never does.
  while (!state.finished) {
    // spin
  }
  expect(state.finished).toBe(true);
});

test("after: never reached", async () => {
  const run = await runAgent("What is 4 + 4?");
  expect(run.result).toBe("8");
});
