/**
 * Batching keeps kill isolation (bench/README.md): when a shard of several files is
 * killed, the files in which no test started run again in fresh one-file
 * shards and are reported once, with their true status.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli, survivors, type CliRun } from "./helpers/cli.ts";
import { readMarks } from "../runner/exec/marks.ts";
import type { RunReport } from "../runner/results/report-model.ts";

afterAll(removeSuites);

const passing = (i: number) =>
  `import { test, expect } from "bun:test";\ntest("ok ${i}", () => expect(${i}).toBe(${i}));\n`;
const failing = `import { test, expect } from "bun:test";\ntest("fails", () => expect(1).toBe(2));\n`;
const wedged =
  `import { test } from "bun:test";\ntest("before", () => {});\n` +
  `test("spins", () => { while (true) {} });\ntest("after", () => {});\n`;

/** 20 files f01..f20 in one shard; f05 wedges, f12 fails, the rest pass. */
function suite(wedgedAt: (name: string) => string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 1; i <= 20; i++) {
    const name = `t/f${String(i).padStart(2, "0")}.test.ts`;
    files[name] = i === 12 ? failing : passing(i);
  }
  files[wedgedAt("f05")] = wedged;
  return files;
}

const byFile = (report: RunReport) => {
  const out = new Map<string, { shard: number; tests: [string, string][] }[]>();
  for (const shard of report.shards) {
    for (const file of shard.files) {
      const list = out.get(file) ?? [];
      list.push({
        shard: shard.index,
        tests: shard.tests.filter((t) => t.file === file).map((t) => [t.name, t.status]),
      });
      out.set(file, list);
    }
  }
  return out;
};

describe("a wedged file among 20 in one shard (--files-per-shard 20, --timeout 3)", () => {
  let dir: string;
  let run: CliRun;
  let report: RunReport;
  beforeAll(async () => {
    dir = makeSuite(suite(() => "t/f05.test.ts"));
    run = await runCli([
      "run",
      "--root",
      dir,
      "--jobs",
      "2",
      "--files-per-shard",
      "20",
      "--timeout",
      "3",
      "--grace",
      "1",
      "t",
    ]);
    report = readReport(dir);
  }, 60_000);

  test("19 files get their true result and the wedged one is timed-out, each reported once", () => {
    expect(run.code).toBe(1);
    const files = byFile(report);
    expect(files.size).toBe(20);
    for (const [file, entries] of files) expect([file, entries.length]).toEqual([file, 1]);
    expect(files.get("t/f05.test.ts")![0]!.tests).toEqual([
      ["before", "passed"],
      ["spins", "timed-out"],
      ["after", "never-started"],
    ]);
    expect(files.get("t/f12.test.ts")![0]!.tests).toEqual([["fails", "failed"]]);
    for (let i = 1; i <= 20; i++) {
      if (i === 5 || i === 12) continue;
      const name = `t/f${String(i).padStart(2, "0")}.test.ts`;
      expect([name, files.get(name)![0]!.tests]).toEqual([name, [[`ok ${i}`, "passed"]]]);
    }
    expect(report.summary.tests["timed-out"]).toBe(1);
    expect(report.summary.tests.passed).toBe(18 + 1);
  });

  test("the killed shard keeps the files that started and names the shards its other files went to", () => {
    const first = report.shards.find((s) => s.index === 1)!;
    expect(first.status).toBe("timed-out");
    expect(first.files).toEqual(["t/f01.test.ts", "t/f02.test.ts", "t/f03.test.ts", "t/f04.test.ts", "t/f05.test.ts"]);
    expect(first.reason).toContain("15 files in which no test started run again in shards 2-16");
    const rest = report.shards.filter((s) => s.index > 1);
    expect(rest.map((s) => s.files.length)).toEqual(new Array(15).fill(1));
    expect(rest.every((s) => s.status === "passed" || (s.status === "failed" && s.files[0] === "t/f12.test.ts"))).toBe(
      true,
    );
    expect(report.completed).toBe(true);
    expect(survivors(report.runId)).toEqual([]);
  });

  test("the JUnit report has one suite per file", () => {
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    expect(xml.match(/<testsuite /g)?.length).toBe(20);
  });
});

describe("without events the re-dispatch still works (it rests on the preload's marks)", () => {
  test("the files after the wedged one get their true results", async () => {
    const dir = makeSuite(suite(() => "t/f05.test.ts"));
    const run = await runCli([
      "run",
      "--root",
      dir,
      "--jobs",
      "2",
      "--files-per-shard",
      "20",
      "--timeout",
      "3",
      "--grace",
      "1",
      "--no-test-events",
      "t",
    ]);
    expect(run.code).toBe(1);
    const report = readReport(dir);
    const files = byFile(report);
    expect(files.size).toBe(20);
    for (let i = 6; i <= 20; i++) {
      const name = `t/f${String(i).padStart(2, "0")}.test.ts`;
      const entries = files.get(name)!;
      expect(entries.length).toBe(1);
      expect([name, entries[0]!.tests]).toEqual([
        name,
        [[i === 12 ? "fails" : `ok ${i}`, i === 12 ? "failed" : "passed"]],
      ]);
    }
    expect(report.shards[0]!.status).toBe("timed-out");
  }, 60_000);
});

describe("readMarks: file records", () => {
  test(
    "counts starts, sees the end mark, lists files (paths " + "may hold s, e and newlines), keeps descendant lines",
    async () => {
      const dir = makeSuite({});
      const file = path.join(dir, "m.marks");
      writeFileSync(file, "f/a/s e\n.test.ts\0ssf/b.test.ts\0sxe\nP 12 10 sleep 15");
      expect(await readMarks(file)).toEqual({
        testsStarted: 3,
        finishedNormally: true,
        descendants: [{ pid: 12, pgid: 10, command: "sleep 15" }],
        filesStarted: ["/a/s e\n.test.ts", "/b.test.ts"],
        filesLoaded: 0,
      });
    },
  );
  test("a path cut short by a kill still counts as started", async () => {
    const dir = makeSuite({});
    const file = path.join(dir, "m.marks");
    writeFileSync(file, "f/a.test.ts\0sf/b.te");
    expect(await readMarks(file)).toEqual({
      testsStarted: 1,
      finishedNormally: false,
      descendants: [],
      filesStarted: ["/a.test.ts", "/b.te"],
      filesLoaded: 0,
    });
  });
});

describe("a file that wedges while loading, first in its shard of 5", () => {
  test("it keeps the shard's timed-out verdict alone; the other 4 run again and pass", async () => {
    const files: Record<string, string> = { "t/a.test.ts": `while (true) {}\n` };
    for (const n of ["b", "c", "d", "e"]) files[`t/${n}.test.ts`] = passing(1);
    const dir = makeSuite(files);
    const run = await runCli([
      "run",
      "--root",
      dir,
      "--jobs",
      "2",
      "--files-per-shard",
      "5",
      "--timeout",
      "3",
      "--grace",
      "1",
      "t",
    ]);
    expect(run.code).toBe(1);
    const report = readReport(dir);
    expect(report.shards.map((s) => [s.files, s.status])).toEqual([
      [["t/a.test.ts"], "timed-out"],
      [["t/b.test.ts"], "passed"],
      [["t/c.test.ts"], "passed"],
      [["t/d.test.ts"], "passed"],
      [["t/e.test.ts"], "passed"],
    ]);
  }, 60_000);
});

describe("a file whose beforeAll hangs, second in its shard of 3", () => {
  test("it keeps its timed-out verdict (its tests were found, " +
    "none started) and is not run again; the file after it is", async () => {
    const hangs = `import { beforeAll, test } from "bun:test";\nbeforeAll(() => { while (true) {} });\ntest("never reached", () => {});\n`;
    const dir = makeSuite({ "t/g1.test.ts": passing(1), "t/g2.test.ts": hangs, "t/g3.test.ts": passing(3) });
    const run = await runCli([
      "run",
      "--root",
      dir,
      "--jobs",
      "1",
      "--files-per-shard",
      "3",
      "--timeout",
      "3",
      "--grace",
      "1",
      "t",
    ]);
    expect(run.code).toBe(1);
    const files = byFile(readReport(dir));
    expect(files.get("t/g1.test.ts")!.map((f) => f.tests)).toEqual([[["ok 1", "passed"]]]);
    expect(files.get("t/g2.test.ts")).toHaveLength(1);
    // Its verdict is the killed shard's own: before, it ran again alone and hung a second whole timeout.
    expect(files.get("t/g2.test.ts")![0]!.shard).toBe(files.get("t/g1.test.ts")![0]!.shard);
    expect(files.get("t/g2.test.ts")![0]!.tests).toEqual([
      ["never reached", "never-started"],
      ["beforeAll hook", "timed-out"],
    ]);
    expect(files.get("t/g3.test.ts")!.map((f) => f.tests)).toEqual([[["ok 3", "passed"]]]);
  }, 60_000);
});
