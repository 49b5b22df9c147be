#!/usr/bin/env bun
/**
 * Whole-process benchmark: `shardguard history` questions over a large history (docs/history.md, "Questions").
 * Builds a SQLite history of RUNS runs × TESTS tests (a few flaky, a few failing, durations drifting) through the
 * store's own append, then times `history --flaky`, `--failing`, `--slow`, `--cost`, `--test NAME` and `--runs`
 * as whole processes, ROUNDS times each. Target (issue 36): every answer under 1 s.
 *
 * Usage: bun bench/history-query.ts [--runs 1000] [--tests 1000] [--rounds 3] [--last 1000]
 * Exits 1 when a median is over the target or a query exits other than 0.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openSqlite } from "../runner/history/sqlite.ts";
import type { RunRow, TestRow } from "../runner/history/schema.ts";
import { CLI, intArg } from "./suite-helpers.ts";

const RUNS = intArg("runs", 1000);
const TESTS = intArg("tests", 1000);
const ROUNDS = intArg("rounds", 3);
const LAST = intArg("last", RUNS);
const TARGET_MS = 1000;

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-bench-history-query-"));
const file = path.join(dir, "history.sqlite");

/** Run `r`'s row: one a minute, on main. */
function runOf(r: number, bad: number): RunRow {
  const at = new Date(Date.UTC(2026, 0, 1) + r * 60_000).toISOString();
  return {
    ...{ run_id: `run-${String(r).padStart(5, "0")}`, started_at: at, finished_at: at, exit_code: bad ? 1 : 0 },
    ...{ completed: 1, bun_version: "1.4.4", git_sha: `sha${r}`, git_branch: "main", default_branch: "main" },
    ...{ slice: null, preset: null, tier: null, settings: "{}", tests_total: TESTS, tests_bad: bad, source: "run" },
  };
}

/** Test `t` of run `r`: every 50th flips each run, every 97th always fails. */
function statusOf(r: number, t: number): string {
  if (t % 97 === 0) return "failed";
  if (t % 50 === 0) return r % 2 === 0 ? "failed" : "passed";
  return "passed";
}

const t0 = performance.now();
const store = openSqlite(file);
for (let r = 0; r < RUNS; r++) {
  const tests: TestRow[] = [];
  for (let t = 0; t < TESTS; t++) {
    const status = statusOf(r, t);
    tests.push({
      ...{ run_id: runOf(r, 0).run_id, file: `f${t % 50}.test.ts`, name: `test ${t}`, status, attempts: 1 },
      ...{ duration_ms: 10 + (t % 13) + r / 100, failure_kind: status === "passed" ? null : "failure" },
      ...{ failure_line: status === "passed" ? null : "expect(received).toBe(expected)", shard_wall_ms: 1000 },
      ...{ shard_cpu_ms: 900, shard_peak_rss: 1e8, cost_usd: null, quarantined: 0 },
    });
  }
  await store.append(runOf(r, tests.filter((x) => x.status !== "passed").length), tests);
}
await store.close();
console.log(`built ${RUNS} runs × ${TESTS} tests in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const questions = [["--flaky"], ["--failing"], ["--slow"], ["--cost"], ["--test", "f7.test.ts > test 57"], ["--runs"]];
let over = false;
try {
  for (const q of questions) {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const argv = [CLI, "history", ...q, "--history", file, "--last", String(LAST), "--json"];
      const began = performance.now();
      const r = spawnSync(process.execPath, argv, { encoding: "utf8", maxBuffer: 1 << 28 });
      times.push(performance.now() - began);
      if (r.status !== 0) throw new Error(`history ${q.join(" ")} exited ${r.status}: ${r.stderr}`);
    }
    const m = median(times);
    over ||= m > TARGET_MS;
    console.log(
      `history ${q.join(" ")} --last ${LAST}: ${m.toFixed(0)} ms (median of ${ROUNDS}; ≤ ${TARGET_MS} ms: ${m <= TARGET_MS ? "met" : "missed"})`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load ${os.loadavg()[0]!.toFixed(1)}`);
process.exit(over ? 1 : 0);
