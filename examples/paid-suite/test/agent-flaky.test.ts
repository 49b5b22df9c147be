/**
 * Failure class: rate-limit flake. The first call of the run is rejected with HTTP 429 (as a
 * shared API key often is when shards start together); the retry, in the same process, gets
 * through. Run with `--retry 1`.
 * Expected shardguard status: passed, with the test marked flaky (one failed attempt).
 */
import { expect, test } from "bun:test";
import { runAgent } from "../helpers/agent.ts";

// Module state survives Bun's in-process retry (the file is not re-evaluated), which is what
// lets the second attempt behave differently from the first. It stands in for the provider's
// quota window.
let attempts = 0;

test("agent answers once the rate limit has cleared", async () => {
  attempts += 1;
  const run = await runAgent("What is 7 + 5?", { rateLimited: attempts === 1 });
  // Checked first so the failed attempt reports the rate-limit message, not a missing answer.
  expect(run.error).toBeUndefined();
  expect(run.exitCode).toBe(0);
  expect(run.result).toBe("12");
});

test("agent answers a second question", async () => {
  const run = await runAgent("What is 100 + 1?", { lines: 2 });
  expect(run.result).toBe("101");
});
