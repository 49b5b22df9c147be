/**
 * Failure class: leaked grandchild. The test reads the agent's answer and returns without
 * waiting for the agent to exit. This agent lingers for ten minutes after answering, so it
 * outlives `bun test`, holding the test process's stderr open and a slot on the machine.
 * The test itself passes; only a kill of the whole process group cleans up.
 * Expected shardguard status: passed (and no fake-agent left running afterwards).
 */
import { expect, test } from "bun:test";
import { startAgent } from "../helpers/agent.ts";

const TEN_MINUTES_MS = 10 * 60 * 1000;

test("agent answers; the test does not wait for it to exit", async () => {
  const agent = startAgent("What is 6 + 7?", { delayMs: 60, lingerMs: TEN_MINUTES_MS });
  const outcome = await agent.outcome();
  expect(outcome?.type).toBe("result");
  expect(outcome?.result).toBe("13");
  // Returning here, with the agent still alive, is the leak: nothing awaits agent.exited.
});
