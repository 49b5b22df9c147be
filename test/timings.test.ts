/**
 * Duration-aware scheduling (bench/README.md): --timings reads Bun's per-file
 * timings format and starts the longest shards first; --update-timings
 * merges the measured durations back, atomically.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { orderByTimings, readTimings, renderTimings } from "../runner/plan/timings.ts";
import { measuredDurations } from "../runner/engine/timings-update.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import type { ShardResult } from "../runner/results/report-model.ts";

afterAll(removeSuites);

const shard = (index: number, ...files: string[]) => ({ index, slug: `s${index}`, files });

describe("orderByTimings (LPT)", () => {
  test("longest estimate first; unknown files count as the mean of the known ones; ties keep plan order", () => {
    const shards = [shard(1, "a"), shard(2, "b"), shard(3, "c", "d"), shard(4, "e"), shard(5, "f")];
    const d = new Map([
      ["a", 100],
      ["b", 3000],
      ["c", 200],
      ["e", 100],
    ]);
    // mean 850: shard 3 = 200 + 850, shard 5 = 850
    expect(orderByTimings(shards, d).map((s) => s.index)).toEqual([2, 3, 5, 1, 4]);
  });
  test("nothing recorded: plan order", () => {
    const shards = [shard(1, "a"), shard(2, "b")];
    expect(orderByTimings(shards, new Map([["zz", 5]])).map((s) => s.index)).toEqual([1, 2]);
  });
});

describe("timings files", () => {
  test("several files merge, later ones win; a missing one is listed, not an error", () => {
    const dir = makeSuite({
      "one.json": JSON.stringify({ version: 1, files: { "a.test.ts": 10, "b.test.ts": 20 } }),
      "two.json": JSON.stringify({ version: 1, files: { "b.test.ts": 30 } }),
    });
    const t = readTimings([path.join(dir, "one.json"), path.join(dir, "gone.json"), path.join(dir, "two.json")]);
    expect([...t.durations]).toEqual([
      ["a.test.ts", 10],
      ["b.test.ts", 30],
    ]);
    expect(t.missing).toEqual([path.join(dir, "gone.json")]);
  });
  test("a file that is not Bun's format is a ConfigError naming it", () => {
    const dir = makeSuite({
      "bad.json": "{not json",
      "shape.json": JSON.stringify({ version: 2, files: {} }),
      "neg.json": JSON.stringify({ version: 1, files: { a: -1 } }),
    });
    for (const f of ["bad.json", "shape.json", "neg.json"]) {
      expect(() => readTimings([path.join(dir, f)])).toThrow(ConfigError);
      expect(() => readTimings([path.join(dir, f)])).toThrow(`invalid --timings "${path.join(dir, f)}"`);
    }
  });
  test("renderTimings merges measured values over the previous ones, sorted, whole ms", () => {
    const text = renderTimings(
      { version: 1, files: { "z.test.ts": 5, "a.test.ts": 1 } },
      new Map([
        ["a.test.ts", 12.6],
        ["m.test.ts", 3],
      ]),
    );
    expect(JSON.parse(text)).toEqual({ version: 1, files: { "a.test.ts": 13, "m.test.ts": 3, "z.test.ts": 5 } });
    expect(Object.keys(JSON.parse(text).files)).toEqual(["a.test.ts", "m.test.ts", "z.test.ts"]);
  });
  test(
    "measuredDurations: one-file shards take the shard's time; batched ones split by test time; never-started " +
      "ones add nothing",
    () => {
      const base = {
        slug: "s",
        status: "passed" as const,
        exitCode: 0,
        signal: null,
        killedBy: null,
        logPath: null,
        logIncomplete: false,
        reason: "",
        leftovers: [],
        testSource: "junit" as const,
      };
      const t = (file: string, durationMs: number) => ({
        name: "t",
        file,
        status: "passed" as const,
        durationMs,
        retries: 0,
        flaky: false,
        attemptFailures: [],
        synthetic: false,
      });
      const shards: ShardResult[] = [
        { ...base, index: 1, files: ["a"], durationMs: 500, startedAt: "x", tests: [t("a", 1)] },
        { ...base, index: 2, files: ["b", "c"], durationMs: 400, startedAt: "x", tests: [t("b", 30), t("c", 10)] },
        { ...base, index: 3, files: ["d"], durationMs: 0, startedAt: null, tests: [] },
      ];
      expect([...measuredDurations(shards)]).toEqual([
        ["a", 500],
        ["b", 300],
        ["c", 100],
      ]);
    },
  );
  test(
    "measuredDurations: a shard cut short (timeout, cancel, crash) never lowers a recorded duration; a " +
      "finished one replaces it",
    () => {
      const base = {
        slug: "s",
        exitCode: null,
        signal: "SIGTERM",
        logPath: null,
        logIncomplete: false,
        reason: "",
        leftovers: [],
        testSource: "junit" as const,
        startedAt: "x",
        tests: [],
      };
      const shards: ShardResult[] = [
        { ...base, index: 1, files: ["timed"], status: "timed-out", killedBy: "timeout", durationMs: 4_000 },
        { ...base, index: 2, files: ["cancelled"], status: "crashed", killedBy: "cancel", durationMs: 1_800 },
        { ...base, index: 3, files: ["crashed"], status: "crashed", killedBy: null, durationMs: 700 },
        { ...base, index: 4, files: ["new-timed"], status: "timed-out", killedBy: "timeout", durationMs: 4_000 },
        {
          ...base,
          index: 5,
          files: ["finished"],
          status: "passed",
          killedBy: null,
          exitCode: 0,
          signal: null,
          durationMs: 900,
        },
      ];
      const previous = { timed: 30_000, cancelled: 30_000, crashed: 500, finished: 5_000 };
      expect(Object.fromEntries(measuredDurations(shards, previous))).toEqual({
        timed: 30_000,
        cancelled: 30_000,
        crashed: 700,
        "new-timed": 4_000,
        finished: 900,
      });
    },
  );
});

describe("the CLI", () => {
  test("a malformed --timings file is exit 2, one line, nothing run", async () => {
    const dir = makeSuite({
      "t/a.test.ts": `import { test } from "bun:test";\ntest("a", () => {});\n`,
      "bad.json": "[]",
    });
    const run = await runCli(["run", "--root", dir, "--timings", path.join(dir, "bad.json"), "t"]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toEqual([
      `shardguard: invalid --timings "${path.join(dir, "bad.json")}": expected Bun's timings format ` +
        `{"version":1,"files":{"<path>":<ms>}}`,
    ]);
    expect(existsSync(path.join(dir, ".shardguard", "runs"))).toBe(false);
  });
  test("an empty SHARDGUARD_TIMINGS list entry is exit 2", async () => {
    const dir = makeSuite({ "t/a.test.ts": `import { test } from "bun:test";\ntest("a", () => {});\n` });
    const run = await runCli(["run", "--root", dir, "t"], { env: { SHARDGUARD_TIMINGS: " , " } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("invalid SHARDGUARD_TIMINGS");
  });

  test("first run: a warning and plan order, durations recorded; second run: the long file starts first", async () => {
    const files: Record<string, string> = {
      "t/z-long.test.ts": `import { test } from "bun:test";\ntest("long", async () => { await Bun.sleep(1500); });\n`,
    };
    for (const n of ["a", "b", "c", "d"])
      files[`t/${n}.test.ts`] =
        `import { test } from "bun:test";\ntest("short", async () => { await Bun.sleep(300); });\n`;
    const dir = makeSuite(files);
    const timings = path.join(dir, "timings.json");
    const args = ["run", "--root", dir, "--jobs", "2", "--timings", timings, "--update-timings", timings, "t"];
    const first = await runCli(args);
    expect(first.code).toBe(0);
    expect(first.stderr).toContain(`warning: --timings ${timings} does not exist`);
    const recorded = JSON.parse(readFileSync(timings, "utf8"));
    expect(recorded.version).toBe(1);
    expect(Object.keys(recorded.files)).toEqual([
      "t/a.test.ts",
      "t/b.test.ts",
      "t/c.test.ts",
      "t/d.test.ts",
      "t/z-long.test.ts",
    ]);
    expect(recorded.files["t/z-long.test.ts"]).toBeGreaterThan(1500);
    const firstOrder = readReport(dir)
      .shards.slice()
      .sort((x, y) => Date.parse(x.startedAt!) - Date.parse(y.startedAt!));
    expect(firstOrder[firstOrder.length - 1]!.files).toEqual(["t/z-long.test.ts"]);

    // The order must not hang on how a loaded machine timed the first run:
    // the long file is made the longest on record, and an entry for a file
    // not in this plan must survive the merge.
    const longest = Math.max(...(Object.values(recorded.files) as number[]));
    writeFileSync(
      timings,
      JSON.stringify({
        ...recorded,
        files: { ...recorded.files, "t/z-long.test.ts": longest + 1000, "gone.test.ts": 7 },
      }),
    );
    const second = await runCli(args);
    expect(second.code).toBe(0);
    expect(second.stderr).not.toContain("warning");
    // Longest first: the long file is in the first wave of --jobs 2 starts
    // (the two START lines of one wave may print in either order).
    const starts = second.stdout.split("\n").filter((l) => l.includes("START"));
    expect(starts.slice(0, 2).some((l) => l.includes("t/z-long.test.ts"))).toBe(true);
    expect(JSON.parse(readFileSync(timings, "utf8")).files["gone.test.ts"]).toBe(7);
  }, 60_000);
});
