/**
 * The history's reads a run makes (runner/history/queries.ts): durations summed by the database, flaky candidates
 * and outcomes of named tests only, so a history of many 100,000-test runs is not read whole before each run.
 */
import { afterAll, expect, test } from "bun:test";
import path from "node:path";
import {
  ANSWER_CANDIDATES,
  failingAnswers,
  fileDurationsOf,
  flakyAnswers,
  flakyCandidates,
  loadOutcomes,
  testsWhere,
  testsNamed,
  trendAnswers,
} from "../runner/history/queries.ts";
import { trendCandidates } from "../runner/history/trend-candidates.ts";
import type { Outcome } from "../runner/history/classify.ts";
import type { RunRow, TestRow } from "../runner/history/schema.ts";
import { openSqlite } from "../runner/history/sqlite.ts";
import { removeSuites, tempDir } from "./helpers/cli.ts";

afterAll(() => removeSuites());

const run = (id: string, at: string): RunRow => ({
  run_id: id,
  started_at: at,
  finished_at: at,
  exit_code: 0,
  completed: 1,
  bun_version: "1.4.4",
  git_sha: "abc",
  git_branch: "main",
  default_branch: "main",
  slice: null,
  preset: null,
  tier: null,
  settings: "{}",
  tests_total: 3,
  tests_bad: 0,
  source: "run",
});

const row = (runId: string, file: string, name: string, status: string, ms: number, attempts = 1): TestRow => ({
  run_id: runId,
  file,
  name,
  status,
  attempts,
  duration_ms: ms,
  failure_kind: null,
  failure_line: null,
  shard_wall_ms: null,
  shard_cpu_ms: null,
  shard_peak_rss: null,
  cost_usd: null,
  quarantined: 0,
});

test("durations from the newest run that had each file; candidates and named outcomes only", async () => {
  const store = await openSqlite(path.join(tempDir(), "history.sqlite"));
  try {
    await store.append(run("r1", "2026-01-01T00:00:00Z"), [
      row("r1", "a.test.ts", "one", "passed", 100),
      row("r1", "a.test.ts", "two", "passed", 50),
      row("r1", "b.test.ts", "flips", "failed", 10),
    ]);
    await store.append(run("r2", "2026-01-02T00:00:00Z"), [
      row("r2", "b.test.ts", "flips", "passed", 30),
      row("r2", "b.test.ts", "retried", "passed", 5, 2),
    ]);
    const durations = await fileDurationsOf(store, { last: 20 });
    // a.test.ts only ran in r1 (150 ms there); b.test.ts's newest run is r2 (30 + 5), not r1's 10.
    expect(Object.fromEntries(durations)).toEqual({ "a.test.ts": 150, "b.test.ts": 35 });
    const candidates = await flakyCandidates(store, { last: 20 });
    expect(candidates.map((c) => `${c.file} > ${c.name}`).sort()).toEqual(["b.test.ts > flips", "b.test.ts > retried"]);
    const flips = await loadOutcomes(store, { last: 20 }, [{ file: "b.test.ts", name: "flips" }]);
    expect(flips.map((t) => [t.key, t.outcomes.map((o) => o.status)])).toEqual([
      ["b.test.ts > flips", ["failed", "passed"]],
    ]);
    // Past one query's worth of named tests, the chunks together still find each named one once.
    const many = [...Array.from({ length: 450 }, (_, i) => ({ file: "c.test.ts", name: `absent ${i}` })), flips[0]!];
    expect((await loadOutcomes(store, { last: 20 }, many)).map((t) => t.outcomes.length)).toEqual([2]);
    expect(await loadOutcomes(store, { last: 20 }, [])).toEqual([]);
    expect((await loadOutcomes(store, { last: 1 })).map((t) => t.key)).toEqual([
      "b.test.ts > flips",
      "b.test.ts > retried",
    ]);
  } finally {
    await store.close();
  }
});

test("the database's candidates give the answers of every test's rows: --flaky, --failing, --test", async () => {
  const store = await openSqlite(path.join(tempDir(), "history.sqlite"));
  const statuses = ["passed", "failed", "timed-out", "crashed", "skipped"];
  try {
    for (let r = 0; r < 12; r++) {
      const id = `r${String(r).padStart(2, "0")}`;
      const rows: TestRow[] = [];
      // Test t's status in run r cycles with a period of its own, so some flip, some fail always, some never.
      for (let t = 0; t < 40; t++)
        if ((t + r) % 7 !== 0)
          rows.push(
            row(
              id,
              `f${t % 3}.test.ts`,
              `t ${t}`,
              statuses[(t * r + t) % (1 + (t % 5))]!,
              t,
              1 + (t % 4 === 1 && r % 3 === 0 ? 1 : 0),
            ),
          );
      await store.append({ ...run(id, `2026-01-01T00:${String(r).padStart(2, "0")}:00Z`), git_sha: `s${r % 4}` }, rows);
    }
    for (const filter of [{ last: 20 }, { last: 5 }, { last: 20, since: "2026-01-01T00:03:00Z" }]) {
      const all = await loadOutcomes(store, filter);
      const flaky = await loadOutcomes(store, filter, await testsWhere(store, filter, ANSWER_CANDIDATES.flaky));
      const failing = await loadOutcomes(store, filter, await testsWhere(store, filter, ANSWER_CANDIDATES.failing));
      expect(flakyAnswers(all).length).toBeGreaterThan(0);
      expect(failingAnswers(all).length).toBeGreaterThan(0);
      expect(flakyAnswers(flaky)).toEqual(flakyAnswers(all));
      expect(failingAnswers(failing)).toEqual(failingAnswers(all));
      const named = await loadOutcomes(store, filter, await testsNamed(store, (t) => t.name.includes("t 1")));
      expect(named).toEqual(all.filter((t) => t.name.includes("t 1")));
    }
  } finally {
    await store.close();
  }
});

test("--slow and --cost from the database's candidates: the answers of every test's rows, ties and gaps included", async () => {
  const store = await openSqlite(path.join(tempDir(), "history.sqlite"));
  try {
    for (let r = 0; r < 10; r++) {
      const id = `r${r}`;
      const rows: TestRow[] = [];
      // Durations tie in pairs, some grow, one jumps from near 0; costs are missing in some runs and tests.
      for (let t = 0; t < 30; t++)
        if ((t + r) % 6 !== 0)
          rows.push({
            ...row(
              id,
              "a.test.ts",
              `t ${t}`,
              "passed",
              t % 5 === 0 ? Math.floor(t / 2) : 0.1 * (t % 7) + r * (t % 3) * 0.37,
            ),
            cost_usd: t % 4 === 0 ? null : t === 7 && r === 9 ? 5 : t === 7 ? 1e-12 : (t % 9) * 0.001 + r * 1e-4,
          });
      await store.append(run(id, `2026-01-01T00:0${r}:00Z`), rows);
    }
    const measures = { duration_ms: (o: Outcome) => o.durationMs, cost_usd: (o: Outcome) => o.costUsd };
    for (const filter of [{ last: 20 }, { last: 4 }])
      for (const column of ["duration_ms", "cost_usd"] as const)
        for (const top of [1, 3, 10, 50]) {
          const all = trendAnswers(await loadOutcomes(store, filter), measures[column], top);
          const only = await loadOutcomes(store, filter, await trendCandidates(store, filter, column, top));
          if (top <= 3) expect(only.length).toBeLessThan(20);
          expect(trendAnswers(only, measures[column], top)).toEqual(all);
        }
  } finally {
    await store.close();
  }
});
