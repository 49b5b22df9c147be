/**
 * Failure class: an ordinary assertion failure. The agent answers, exits 0, and the answer is
 * wrong (it says Sydney). The report must carry Bun's expected-vs-received message for the
 * failing test and still count the passing one.
 * Expected shardguard status: failed (one test failed, one passed).
 */
import { expect, test } from "bun:test";
import { runAgent } from "../helpers/agent.ts";

test("agent names the capital of France", async () => {
  const run = await runAgent("What is the capital of France?");
  expect(run.result).toBe("Paris");
});

test("agent names the capital of Australia", async () => {
  const run = await runAgent("What is the capital of Australia?");
  // The process succeeded; only the content is wrong, which is the usual way paid tests fail.
  expect(run.exitCode).toBe(0);
  expect(run.result).toBe("Canberra");
});
