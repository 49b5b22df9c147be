/**
 * What the console tells a new user (runner/report/console.ts, console-reporter.ts): a batched shard named in one
 * short line, flaky and never-started tests named at the end, the five slowest files, a log tail without Bun's
 * coverage table, START lines in the order shards really ran, and the timings file `--update-timings` wrote.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { endLine, filesLabel, logTail, startLine, summaryLines } from "../runner/report/console.ts";
import { makeSuite, removeSuites, runCli } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

afterAll(removeSuites);

const PATHS = { junit: "j.xml", json: "r.json", ctrf: "c.json" };
const FIFTEEN = Array.from({ length: 15 }, (_, i) => `test/integration/area-${i}/feature-${i}.test.ts`);

describe("a batched shard on one line", () => {
  test("START, end and summary lines name 15 files in under 200 characters, the count and the first file kept", () => {
    const label = filesLabel(FIFTEEN);
    expect(label).toStartWith("15 files: test/integration/area-0/feature-0.test.ts, ");
    expect(label).toMatch(/, … \+\d+$/);
    const shard = makeShard({ index: 2, files: FIFTEEN, status: "failed", reason: "1 test failed", logPath: null });
    const start = startLine({ index: 2, files: FIFTEEN } as never, 4, 1_800_000, ".shardguard/logs/shard-2.log");
    const end = endLine(shard, 4).split("\n")[0]!;
    const summary = summaryLines(makeReport([shard]), PATHS).find((l) => l.includes("15 files"))!;
    for (const line of [start, end, summary]) {
      expect(line.length).toBeLessThan(200);
      expect(line).toContain(label);
    }
  });

  test("one file: its path as it is; few files: all of them, no count of more", () => {
    expect(filesLabel(["test/a.test.ts"])).toBe("test/a.test.ts");
    expect(filesLabel(["a.test.ts", "b.test.ts"])).toBe("2 files: a.test.ts, b.test.ts");
  });
});

describe("the closing summary", () => {
  const flaky = makeTest({ name: "retries > passes second", file: "test/f.test.ts", flaky: true, retries: 1 });
  const never = makeTest({ name: "waits", file: "test/n.test.ts", status: "never-started", durationMs: 0 });
  const shards = [
    makeShard({ index: 1, tests: [flaky], durationMs: 4_000 }),
    makeShard({ index: 2, tests: [never], status: "never-started", startedAt: null, reason: "not started" }),
    ...[1, 7, 3, 9, 5, 2].map((s, i) =>
      makeShard({ index: i + 3, files: [`test/s${s}.test.ts`], durationMs: s * 1000 }),
    ),
  ];
  const lines = summaryLines(makeReport(shards), PATHS);

  test("a passed shard's end line counts its flaky tests", () => {
    expect(endLine(shards[0]!, 8)).toEndWith(": exited 0 (1 flaky test)");
    expect(endLine(shards[3]!, 8)).toEndWith(": exited 0");
  });

  test("names every flaky test, with its attempts", () => {
    const at = lines.indexOf("shardguard: flaky tests (an attempt failed, a retry passed):");
    expect(at).toBeGreaterThan(-1);
    expect(lines[at + 1]).toBe("    test/f.test.ts > retries > passes second (2 attempts)");
  });

  test("lists never-started tests among the tests that did not pass", () => {
    const at = lines.indexOf("shardguard: tests that did not pass:");
    expect(lines[at + 1]).toContain("never-started test/n.test.ts > waits");
  });

  test("lists the five slowest files that ran, slowest first", () => {
    const at = lines.indexOf("shardguard: slowest files:");
    expect(lines[at + 6]).toStartWith("shardguard: JUnit");
    expect(lines.slice(at + 1, at + 6).map((l) => l.trim().split(/\s+/)[1])).toEqual([
      "test/s9.test.ts",
      "test/s7.test.ts",
      "test/s5.test.ts",
      "test/f.test.ts",
      "test/s3.test.ts",
    ]);
  });
});

test("the log tail leaves out Bun's coverage table, however long, and keeps the failure above it", async () => {
  const rows = Array.from({ length: 400 }, (_, i) => ` src/module-${i}.ts${" ".repeat(8)}|   50.00 |   66.67 | 3-9`);
  const rule = "-----------------------|---------|---------|-------------------";
  const log = [
    "test/a.test.ts:",
    "error: expect(received).toBe(expected)",
    "Expected: 2",
    "Received: 1",
    "(fail) a [1.00ms]",
    "",
    rule,
    "File                   | % Funcs | % Lines | Uncovered Line #s",
    rule,
    "All files              |   50.00 |   66.67 |",
    ...rows,
    rule,
    "",
    " 0 pass",
    " 1 fail",
  ].join("\n");
  const dir = makeSuite({ "shard.log": `${log}\n` });
  const tail = await logTail(path.join(dir, "shard.log"));
  expect(tail).toContain("Expected: 2\nReceived: 1\n(fail) a [1.00ms]\n\n(Bun's coverage table, 405 lines, left out");
  expect(tail).toEndWith(" 0 pass\n 1 fail");
  expect(tail).not.toContain("% Funcs");
  expect(tail).not.toContain("module-");
});

test("--jobs 1: each START follows the previous shard's end line; --update-timings names its file", async () => {
  const dir = makeSuite({
    "t/a.test.ts": 'import { test } from "bun:test";\ntest("a", () => {});\n',
    "t/b.test.ts": 'import { test } from "bun:test";\ntest("b", () => {});\n',
    "t/c.test.ts": 'import { expect, test } from "bun:test";\ntest("c", () => { expect(1).toBe(2); });\n',
  });
  const timings = path.join(dir, "timings.json");
  const r = await runCli([
    "run",
    "--root",
    dir,
    "--out",
    `${dir}/.sg`,
    "--jobs",
    "1",
    "--update-timings",
    timings,
    "t",
  ]);
  expect(r.code).toBe(1);
  const order = r.stdout
    .split("\n")
    .map((l) => /^\[(\d)\/3\] (START|PASSED|FAILED)/.exec(l))
    .filter((m) => m !== null)
    .map((m) => `${m[1]} ${m[2] === "START" ? "start" : "end"}`);
  expect(order).toEqual(["1 start", "1 end", "2 start", "2 end", "3 start", "3 end"]);
  expect(existsSync(timings)).toBe(true);
  expect(r.stdout).toContain(`shardguard: timings of 3 files merged into ${timings}`);
  // The failure's Expected/Received on the closing list, from Bun's JUnit failure text.
  expect(r.stdout).toMatch(
    /c\.test\.ts > c: expect\(received\)\.toBe\(expected\)\n\s+\| Expected: 2\n\s+\| Received: 1/,
  );
});
