/**
 * The history in runs (docs/history.md, "Use in runs"), with real runs: its durations order the shards longest
 * first and size `--files-per-shard auto` batches when no --timings is given; the console's end names the failures
 * new since their last pass, those failing before, and the known flaky ones.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import path from "node:path";
import { openSqlite } from "../runner/history/sqlite.ts";
import { HISTORY_SCHEMA_VERSION, MIGRATIONS } from "../runner/history/schema.ts";
import { fileDurationsOf } from "../runner/history/queries.ts";
import { makeSuite, readReport, removeSuites, runCli, tempDir } from "./helpers/cli.ts";
import { flakySuite, runSuite } from "./helpers/history-suite.ts";

afterAll(removeSuites);

const quick = (name: string) => `import { test } from "bun:test";\ntest("${name}", () => {});\n`;
const slow = (name: string, ms: number) =>
  `import { test } from "bun:test";\ntest("${name}", async () => { await Bun.sleep(${ms}); });\n`;

/** One run of `dir` with one job, so shards start one after another in the order chosen. */
const runOneJob = (dir: string, args: string[] = []) =>
  runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "60", ...args], { limitMs: 90_000 });

/** The suite's files in the order their shards started in the newest run. */
function startOrder(dir: string): string[] {
  return readReport(dir)
    .shards.filter((s) => s.startedAt !== null)
    .sort((a, b) => Date.parse(a.startedAt!) - Date.parse(b.startedAt!))
    .map((s) => s.files.join(","));
}

describe("run history in runs", () => {
  test("without --timings the history's durations start the longest shard first", async () => {
    const dir = makeSuite({ "a.test.ts": quick("a"), "b.test.ts": quick("b"), "z.test.ts": slow("z", 600) });
    expect((await runOneJob(dir)).code).toBe(0);
    // The first run has no history: plan order, so the slow file starts last.
    expect(startOrder(dir)).toEqual(["a.test.ts", "b.test.ts", "z.test.ts"]);
    expect((await runOneJob(dir)).code).toBe(0);
    expect(startOrder(dir)[0]).toBe("z.test.ts");
    // --no-history reads nothing: plan order again.
    expect((await runOneJob(dir, ["--no-history"])).code).toBe(0);
    expect(startOrder(dir)[0]).toBe("a.test.ts");
  }, 120_000);

  test("--files-per-shard auto sizes its batches from the history's durations", async () => {
    const files: Record<string, string> = { "heavy.test.ts": slow("heavy", 1200) };
    for (let i = 1; i <= 5; i++) files[`q${i}.test.ts`] = quick(`q${i}`);
    const dir = makeSuite(files);
    // Two jobs: a shared batch's target is the total over the jobs, which one heavy file then reaches.
    const twoJobs = () =>
      runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "60", "--files-per-shard", "auto"], {
        limitMs: 90_000,
      });
    expect((await twoJobs()).code).toBe(0);
    // Nothing recorded: six files of the assumed 50 ms make one batch (0.3 s, under the 0.5 s floor).
    expect(readReport(dir).shards.map((s) => s.files.length)).toEqual([6]);
    expect((await twoJobs()).code).toBe(0);
    // The heavy file's recorded duration is over the batch target: it runs alone, the quick ones together.
    const shards = readReport(dir).shards.map((s) => s.files);
    expect(shards).toContainEqual(["heavy.test.ts"]);
    expect(shards.flat().sort()).toEqual(Object.keys(files).sort());
  }, 120_000);

  test("the console's end: new since the last pass, failing before, known flaky", async () => {
    const dir = flakySuite(true);
    const outs: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await runSuite(dir);
      expect(r.code).toBe(1);
      outs.push(r.stdout);
    }
    // Run 1: no past, every failure is new; the flaky test passed.
    expect(outs[0]).toContain("new since their last pass: 1 failure: a.test.ts > stable failure");
    // Run 2: the flaky test fails for the first time after a pass; the stable failure failed before.
    expect(outs[1]).toContain("new since their last pass: 1 failure: a.test.ts > flaky");
    expect(outs[1]).toContain("failing before this run too: a.test.ts > stable failure");
    expect(outs[1]).not.toContain("known flaky");
    // Run 4: after pass, fail, pass the history knows it as flaky.
    expect(outs[3]).toContain("known flaky (history): a.test.ts > flaky (flip rate 100%)");
    expect(outs[3]).not.toContain("known flaky (history): a.test.ts > stable failure");
  }, 240_000);

  test("a version 1 history is migrated in place: its per-file sums are filled from its tests", async () => {
    const file = path.join(tempDir("sg-hist-migrate-"), "history.sqlite");
    const db = new Database(file, { create: true });
    for (const sql of MIGRATIONS[0]!) db.exec(sql);
    db.exec("INSERT INTO meta VALUES ('schema_version', '1')");
    db.exec(
      "INSERT INTO runs VALUES ('r1', '2026-12-01T00:00:00Z', NULL, 0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{}', 2, 0, 'run')",
    );
    db.exec(
      "INSERT INTO tests (run_id, file, name, status, attempts, duration_ms, quarantined) VALUES " +
        "('r1', 'a.test.ts', 'x', 'passed', 1, 30, 0), ('r1', 'a.test.ts', 'y', 'passed', 1, 12, 0)",
    );
    db.close();
    const store = openSqlite(file);
    try {
      expect([...(await fileDurationsOf(store, { last: 20 }))]).toEqual([["a.test.ts", 42]]);
      expect(await store.all("SELECT value FROM meta WHERE key = 'schema_version'")).toEqual([
        { value: String(HISTORY_SCHEMA_VERSION) },
      ]);
    } finally {
      await store.close();
    }
  });
});
