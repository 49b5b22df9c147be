/**
 * Failure class: process.exit(0) mid-file. The second test calls a CLI-style entry point that
 * ends with process.exit(0). Bun stops at once with exit code 0 and no summary: the rest of
 * that test and the whole third test never run, yet a runner that trusts the exit code sees
 * a pass.
 * Expected shardguard status: crashed (first test passed, second and third unfinished).
 */
import { expect, test } from "bun:test";
import { runAgent } from "../helpers/agent.ts";

/**
 * The shape of many CLI `main` functions: do the work, then exit with the status. Fine as a
 * program entry point, fatal when a test calls it in-process.
 */
async function askCli(prompt: string): Promise<never> {
  const run = await runAgent(prompt, { lines: 2 });
  process.stdout.write(`${run.result ?? run.error ?? ""}\n`);
  process.exit(run.exitCode);
}

test("agent answers a question", async () => {
  const run = await runAgent("What is 8 + 9?");
  expect(run.result).toBe("17");
});

test("ask CLI prints the answer", async () => {
  const run = await runAgent("What is 3 + 4?", { lines: 2 });
  expect(run.result).toBe("7");
  // Half way through: the process ends inside this call.
  await askCli("What is 3 + 4?");
  expect("unreachable").toBe("reached");
});

test("agent answers after the CLI test", async () => {
  const run = await runAgent("What is 10 + 10?");
  expect(run.result).toBe("20");
});
