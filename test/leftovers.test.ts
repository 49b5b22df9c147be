/**
 * Processes a shard leaves behind (docs/architecture.md, leftovers): one leaked inside the
 * process group is killed by Bun's --no-orphans the moment the child exits,
 * before any sweep can look; it is listed at the end of the run (by the
 * runner at the end-of-run barrier when events are on, else by the child
 * preload), so it is still reported.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readMarks } from "../runner/exec/marks.ts";
import { makeSuite, readReport, removeSuites, runCli, waitFor } from "./helpers/cli.ts";
import { alive } from "./helpers/processes.ts";

describe("a process leaked inside the group", () => {
  test("is listed in the shard's leftovers and on the " +
    "console, and is dead afterwards; the shard still passes", async () => {
    const dir = makeSuite({
      "leak.test.ts":
        'import { test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n' +
        'test("leak", () => {\n  const p = Bun.spawn(["sleep", "15"], { stdout: "inherit" });\n' +
        "  writeFileSync(`${import.meta.dir}/leak.pid`, String(p.pid));\n});\n",
      "clean.test.ts":
        'import { test } from "bun:test";\ntest("clean", async () => { await Bun.spawn(["true"]).exited; });\n',
    });
    const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "30"]);
    expect(run.code).toBe(0);
    const leaked = Number(readFileSync(path.join(dir, "leak.pid"), "utf8"));
    const report = readReport(dir);
    const shard = report.shards.find((s) => s.files[0] === "leak.test.ts")!;
    expect(shard.status).toBe("passed");
    expect(shard.leftovers).toEqual([{ pid: leaked, command: "sleep 15", leftGroup: false }]);
    // A process a test waited for is no leftover.
    expect(report.shards.find((s) => s.files[0] === "clean.test.ts")!.leftovers).toEqual([]);
    expect(run.stdout).toMatch(
      new RegExp(`\\] killed 1 leftover process still running after the shard's tests ended: ${leaked} sleep 15`),
    );
    expect(await waitFor(() => !alive(leaked), 2_000)).toBe(true);
  }, 60_000);
});

describe("who lists a process leaked inside the group", () => {
  // With events on the runner lists the child's descendants at the end-of-run
  // barrier and the preload skips its listing (about 1 ms of the child's CPU);
  // without events the preload lists them into its marks file.
  const leakSuite = () =>
    makeSuite({
      "leak.test.ts":
        'import { test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n' +
        'test("leak", () => {\n  const p = Bun.spawn(["sleep", "15"], { stdout: "inherit" });\n' +
        "  writeFileSync(`${import.meta.dir}/leak.pid`, String(p.pid));\n});\n",
    });
  const marksText = (dir: string) => {
    const runs = path.join(dir, ".shardguard", "runs");
    const [run] = readdirSync(runs).filter((name) => !name.startsWith("."));
    return readFileSync(path.join(runs, run!, "junit", "shard-1.marks"), "utf8");
  };
  for (const events of [true, false]) {
    test(`events ${events ? "on: the runner, at the end-of-run barrier" : "off: the child preload, in its marks file"}`, async () => {
      const dir = leakSuite();
      const run = await runCli([
        "run",
        "--root",
        dir,
        "--jobs",
        "1",
        "--timeout",
        "30",
        ...(events ? [] : ["--no-test-events"]),
      ]);
      expect(run.code).toBe(0);
      const leaked = Number(readFileSync(path.join(dir, "leak.pid"), "utf8"));
      expect(readReport(dir).shards[0]!.leftovers).toEqual([{ pid: leaked, command: "sleep 15", leftGroup: false }]);
      expect(marksText(dir).includes(`\nP ${leaked} `)).toBe(!events);
      expect(await waitFor(() => !alive(leaked), 2_000)).toBe(true);
    }, 60_000);
  }
});

describe("readMarks", () => {
  test("counts the marks and reads the descendant lines", async () => {
    const dir = makeSuite({});
    const file = path.join(dir, "m.marks");
    writeFileSync(file, "ssse\nP 12 10 sleep 15\nP 13 13 sh -c sleep 9 & wait");
    expect(await readMarks(file)).toEqual({
      testsStarted: 3,
      finishedNormally: true,
      descendants: [
        { pid: 12, pgid: 10, command: "sleep 15" },
        { pid: 13, pgid: 13, command: "sh -c sleep 9 & wait" },
      ],
      filesStarted: [],
      filesLoaded: 0,
    });
    expect(await readMarks(path.join(dir, "missing.marks"))).toEqual({
      testsStarted: 0,
      finishedNormally: false,
      descendants: [],
      filesStarted: [],
      filesLoaded: 0,
    });
  });

  test("a file a test filled with junk is read with bounded results", async () => {
    const dir = makeSuite({});
    const file = path.join(dir, "m.marks");
    writeFileSync(file, `${"s".repeat(3_000_000)}\n${`P 1 1 ${"y".repeat(5000)}\n`.repeat(500)}`);
    const marks = await readMarks(file);
    expect(marks.testsStarted).toBe(3_000_000);
    expect(marks.finishedNormally).toBe(false);
    expect(marks.descendants.length).toBe(100);
    expect(marks.descendants[0]!.command.length).toBe(200);
  });
});

afterAll(removeSuites);
