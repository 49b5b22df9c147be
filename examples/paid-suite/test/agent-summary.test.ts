/**
 * Failure class: none. A second healthy file, this one grouping its tests in a describe
 * block, so reports show the describe path ("summarize > ...") in test names.
 * Expected shardguard status: passed.
 */
import { describe, expect, test } from "bun:test";
import { runAgent } from "../helpers/agent.ts";

const ARTICLE =
  "Process groups let a supervisor signal a command and all of its children at once. " +
  "Without them, killing a test runner leaves its helpers running. " +
  "This is why CI machines slowly fill up with stray browsers.";

describe("summarize", () => {
  test("returns the first sentence of the article", async () => {
    const run = await runAgent(`Summarize: ${ARTICLE}`);
    expect(run.exitCode).toBe(0);
    expect(run.result).toBe("Process groups let a supervisor signal a command and all of its children at once.");
  });

  test("summary is shorter than the article", async () => {
    const run = await runAgent(`Summarize: ${ARTICLE}`, { lines: 2 });
    expect(run.result?.length ?? Infinity).toBeLessThan(ARTICLE.length);
  });

  // An agent error is an expected outcome here, not a test failure: the test checks that the
  // failure is reported in the stream and in the exit code.
  test("reports a tool failure as an error result and exit code 1", async () => {
    const run = await runAgent(`Summarize: ${ARTICLE}`, { fail: true, lines: 1 });
    expect(run.exitCode).toBe(1);
    expect(run.result).toBeUndefined();
    expect(run.error).toContain("tool call failed");
  });
});
