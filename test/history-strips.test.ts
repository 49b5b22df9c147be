/**
 * report.html's strips from the history (runner/history/strips.ts): at most 20 outcomes, the newest, this run's
 * last; only the planned files' tests; the flip rate of `history --flaky` over the strip.
 */
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { htmlHistory, loadStrips, STRIP_LENGTH } from "../runner/history/strips.ts";
import { openSqlite } from "../runner/history/sqlite.ts";
import type { RunRow, TestRow } from "../runner/history/schema.ts";
import { removeSuites, tempDir } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

afterAll(removeSuites);

/** Run `r`'s row: one a minute, on main, one bad test in three. */
function runOf(r: number): RunRow {
  const at = new Date(Date.UTC(2026, 0, 1) + r * 60_000).toISOString();
  return {
    ...{ run_id: `run-${String(r).padStart(2, "0")}`, started_at: at, finished_at: at, exit_code: 1, completed: 1 },
    ...{ bun_version: "1.4.4", git_sha: `sha${r}`, git_branch: "main", default_branch: "main", slice: null },
    ...{ preset: null, tier: null, settings: "{}", tests_total: 3, tests_bad: 1, source: "run" },
  };
}

/** A `tests` row of run `r`. */
function testOf(r: number, file: string, name: string, status: string): TestRow {
  return {
    ...{ run_id: runOf(r).run_id, file, name, status, attempts: 1, duration_ms: 1, failure_kind: null },
    ...{ failure_line: null, shard_wall_ms: 1, shard_cpu_ms: 1, shard_peak_rss: 1, cost_usd: null, quarantined: 0 },
  };
}

describe("history strips", () => {
  test("25 runs: the strip is the newest 19 and this run's, the flip rate over those 20", async () => {
    const store = openSqlite(path.join(tempDir("sg-strips-"), "history.sqlite"));
    for (let r = 0; r < 25; r++) {
      // "flips" alternates from run 0 (passed); "steady" always passes; "gone.test.ts" is not planned.
      const rows = [
        testOf(r, "a.test.ts", "flips", r % 2 === 0 ? "passed" : "failed"),
        testOf(r, "a.test.ts", "steady", "passed"),
        testOf(r, "gone.test.ts", "old", "passed"),
      ];
      await store.append(runOf(r), rows);
    }
    const past = await loadStrips(store, new Set(["a.test.ts"]));
    await store.close();
    expect(past.runs.map((r) => r.runId)).toEqual(Array.from({ length: 20 }, (_, i) => String(runOf(i + 5).run_id)));
    expect([...past.tests.keys()].sort()).toEqual(["a.test.ts > flips", "a.test.ts > steady"]);
    const report = makeReport([
      makeShard({ index: 1, tests: [makeTest({ file: "a.test.ts", name: "flips", status: "passed" })] }),
    ]);
    const history = htmlHistory(past, report);
    expect(history.runs).toEqual([...past.runs.map((r) => r.runId), report.runId]);
    const flips = history.strip("a.test.ts", "flips", "passed", 1);
    expect(flips.at).toEqual(Array.from({ length: STRIP_LENGTH }, (_, i) => i + 1));
    // Runs 6..24 alternate (6 passed), then this run passed after run 24's pass: 18 flips over 19 pairs.
    expect(flips.statuses.slice(0, 2)).toEqual(["passed", "failed"]);
    expect(flips.statuses.at(-1)).toBe("passed");
    expect(flips.runs).toBe(20);
    expect(flips.flipRate).toBeCloseTo(18 / 19, 6);
    const steady = history.strip("a.test.ts", "steady", "failed", 1);
    expect([steady.statuses.length, steady.flipRate, steady.statuses.at(-1)]).toEqual([20, 1 / 19, "failed"]);
    // A test the history never saw: this run's outcome alone.
    expect(history.strip("a.test.ts", "new", "passed", 1)).toEqual({
      at: [20],
      statuses: ["passed"],
      flipRate: 0,
      runs: 1,
    });
  });
});
