/**
 * Failure class: none. The control group: a file whose tests call the agent and pass, so a
 * report can show what a healthy paid-tier file looks like next to the broken ones.
 * Expected shardguard status: passed.
 */
import { expect, test } from "bun:test";
import { runAgent } from "../helpers/agent.ts";

test("agent adds two numbers", async () => {
  const run = await runAgent("What is 19 + 23?");
  expect(run.exitCode).toBe(0);
  expect(run.result).toBe("42");
});

test("agent names the capital of Japan", async () => {
  const run = await runAgent("What is the capital of Japan?");
  expect(run.exitCode).toBe(0);
  expect(run.result).toBe("Tokyo");
});

test("agent streams init first, thinking steps next, result last", async () => {
  const run = await runAgent("What is 1 + 1?", { lines: 3 });
  expect(run.events.map((event) => event.type)).toEqual(["system", "assistant", "assistant", "assistant", "result"]);
  expect(run.events[0]?.prompt).toBe("What is 1 + 1?");
});
