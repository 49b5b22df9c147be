/**
 * Tests defined through helper modules (gstack's describeIfSelected /
 * testConcurrentIfSelected): Bun 1.4.4 sends the helper's url and line in
 * their `found` events, and its JUnit gives them the helper's line. Real CLI,
 * real `bun test` children, fixture files in temp directories.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, runCli, shardOf } from "./helpers/cli.ts";

const HELPER = `import { test, describe } from "bun:test";
const on = !process.env.OFF;
export function myTest(n: string, fn: () => any) { (on ? test.concurrent : test.skip)(n, fn, 10000); }
export function mySerialTest(n: string, fn: () => any) { (on ? test : test.skip)(n, fn, 10000); }
export function myDescribe(n: string, fn: () => void) { (on ? describe : describe.skip)(n, fn); }
`;
/** Line of every test() / describe() call in HELPER: what must never be reported as a test file's line. */
const HELPER_LINES = [3, 4, 5];

const wrapped = (spin: boolean) => `import { expect } from "bun:test";
import { myTest, mySerialTest, myDescribe } from "./helpers/h";
let n = 0;
myDescribe("A", () => { myTest("flaky", async () => { await Bun.sleep(5); n++; expect(n).toBe(2); }); });
myDescribe("B", () => { myTest("ok", async () => { await Bun.sleep(5); });
  mySerialTest("spin", async () => { await Bun.sleep(5); ${spin ? "while (true) {}" : ""} });
  mySerialTest("after", () => {}); });
`;

const rows = (tests: { name: string; status: string; retries: number; flaky: boolean }[]) =>
  tests.map((t) => [t.name, t.status, t.retries, t.flaky]);

describe("a single-file shard of helper-defined tests", () => {
  test(
    "killed: ended tests keep their status and retries, the one " +
      "in flight is timed-out, the rest never-started; no helper line",
    async () => {
      const dir = makeSuite({ "test/helpers/h.ts": HELPER, "test/wrapped.test.ts": wrapped(true) });
      const run = await runCli(["run", "--root", dir, "--timeout", "3", "--grace", "0.5", "--", "--retry=1"]);
      expect(run.code).toBe(1);
      const tests = shardOf(readReport(dir), "test/wrapped.test.ts").tests;
      expect(rows(tests)).toEqual([
        ["A > flaky", "passed", 1, true],
        ["B > ok", "passed", 0, false],
        ["B > spin", "timed-out", 0, false],
        ["B > after", "never-started", 0, false],
      ]);
      expect(tests.every((t) => t.file === "test/wrapped.test.ts" && t.line === undefined)).toBe(true);
    },
  );

  test(
    "normal end: the retried test is flaky with retries " + "1, and Bun's JUnit helper line is not reported",
    async () => {
      const dir = makeSuite({ "test/helpers/h.ts": HELPER, "test/wrapped.test.ts": wrapped(false) });
      const run = await runCli(["run", "--root", dir, "--timeout", "30", "--", "--retry=1"]);
      expect(run.code).toBe(0);
      const tests = shardOf(readReport(dir), "test/wrapped.test.ts").tests;
      expect(rows(tests).sort()).toEqual(
        [
          ["A > flaky", "passed", 1, true],
          ["B > ok", "passed", 0, false],
          ["B > spin", "passed", 0, false],
          ["B > after", "passed", 0, false],
        ].sort(),
      );
      expect(tests.map((t) => t.line)).toEqual([undefined, undefined, undefined, undefined]);
      const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
      for (const line of HELPER_LINES) expect(xml).not.toContain(`line="${line}"`);
      expect(xml).toContain("<flakyFailure");
      // The assertion error of attempt 1 arrived while three concurrent tests ran; the retry claims it.
      const flaky = tests.find((t) => t.name === "A > flaky")!;
      expect(flaky.attemptFailures.map((f) => f.message)).toEqual([expect.stringContaining("Expected: 2")]);
      expect(tests.find((t) => t.name === "B > ok")!.attemptFailures).toEqual([]);
    },
  );
});

describe("a batched shard mixing direct and helper-defined tests", () => {
  const files = {
    "test/helpers/h.ts": HELPER,
    // Line 2 is a direct test(): its line is the test file's own and is kept.
    "test/a-mixed.test.ts": `import { test } from "bun:test"; import { myTest, myDescribe } from "./helpers/h";
test("direct", () => {});
myDescribe("C", () => { myTest("c1", async () => {}); });
`,
    "test/b-only-helper.test.ts": `import { myTest } from "./helpers/h";
myTest("t1", async () => {});
myTest("t2", async () => {});
`,
  };

  for (const spin of [false, true]) {
    test(
      spin ? "killed in its last file: every test is in its own file" : "normal end: every test is in its own file",
      async () => {
        const dir = makeSuite({ ...files, "test/c-wrapped.test.ts": wrapped(spin) });
        const run = await runCli([
          "run",
          "--root",
          dir,
          "--files-per-shard",
          "3",
          "--timeout",
          spin ? "4" : "30",
          "--grace",
          "0.5",
          "--",
          "--retry=1",
        ]);
        expect(run.code).toBe(spin ? 1 : 0);
        const report = readReport(dir);
        expect(report.shards.length).toBe(1);
        const byFile = (file: string) =>
          report.shards[0]!.tests.filter((t) => t.file === file)
            .map((t) => [t.name, t.status, t.line])
            .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
        expect(byFile("test/a-mixed.test.ts")).toEqual([
          ["C > c1", "passed", undefined],
          ["direct", "passed", 2],
        ]);
        expect(byFile("test/b-only-helper.test.ts")).toEqual([
          ["t1", "passed", undefined],
          ["t2", "passed", undefined],
        ]);
        expect(byFile("test/c-wrapped.test.ts")).toEqual([
          ["A > flaky", "passed", undefined],
          ["B > after", spin ? "never-started" : "passed", undefined],
          ["B > ok", "passed", undefined],
          ["B > spin", spin ? "timed-out" : "passed", undefined],
        ]);
        expect(report.shards[0]!.tests.some((t) => t.name === "(whole file)")).toBe(false);
      },
    );
  }
});

describe("helper-defined tests whose file cannot be proven from events", () => {
  test("--rerun-each in a batched shard: Bun's JUnit statuses stand, and no helper line is reported", async () => {
    // Each file runs twice in a row: the found blocks outnumber the preload's file records.
    const dir = makeSuite({
      "test/helpers/h.ts": HELPER,
      "test/a.test.ts": `import { myTest } from "./helpers/h";\nmyTest("t1", async () => {});\n`,
      "test/b.test.ts": wrapped(false),
    });
    const run = await runCli([
      "run",
      "--root",
      dir,
      "--files-per-shard",
      "2",
      "--timeout",
      "30",
      "--",
      "--rerun-each=2",
    ]);
    expect(run.code).toBe(1); // A > flaky fails without --retry
    const tests = readReport(dir).shards[0]!.tests;
    expect(tests.filter((t) => t.file === "test/a.test.ts").map((t) => [t.name, t.status])).toEqual([
      ["t1", "passed"],
      ["t1", "passed"],
    ]);
    expect(tests.filter((t) => t.file === "test/b.test.ts" && t.name === "A > flaky").length).toBe(2);
    expect(tests.map((t) => t.line)).toEqual(tests.map(() => undefined));
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    for (const line of HELPER_LINES) expect(xml).not.toContain(`line="${line}"`);
  });
});
