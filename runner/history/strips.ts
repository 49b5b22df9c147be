/**
 * report.html's outcome strips (issue 36): each planned test's outcomes in the newest runs before this one, read in
 * one query by the append worker while the run goes, and this run's status added in memory when the page is rendered.
 */
import type { RunReport } from "../results/report-model.ts";
import { flakiness, type HistoryRunFacts, type Outcome } from "./classify.ts";
import { selectRuns } from "./queries.ts";
import { runRow, testKey } from "./rows.ts";
import type { HistoryStore } from "./store.ts";

/** Outcomes a strip shows at most: this run's and the newest before it. */
export const STRIP_LENGTH = 20;

/** The past the strips are drawn from: the runs read, oldest first, and each test's outcomes in them. */
export interface PastStrips {
  runs: HistoryRunFacts[];
  /** By test key: its outcomes as the query aggregated them, "<run letter><status>" joined by ",", any order. */
  tests: Map<string, string>;
}

/** The letter of the run at `i` in the query (a run's position in 20 letters), and back. */
const runLetter = (i: number) => String.fromCharCode(97 + i);

/**
 * The outcomes of the tests of `files` in the newest `STRIP_LENGTH` runs: one query over those runs' `tests` rows that
 * answers a row per test (its outcomes aggregated in one short string), so 100,000 tests are 100,000 rows, not 2M.
 */
export async function loadStrips(store: HistoryStore, files: ReadonlySet<string>): Promise<PastStrips> {
  const rows = await selectRuns(store, { last: STRIP_LENGTH });
  const runs = rows.map(
    (r): HistoryRunFacts => ({
      runId: String(r.run_id),
      startedAt: String(r.started_at),
      sha: r.git_sha == null ? null : String(r.git_sha),
      branch: r.git_branch == null ? null : String(r.git_branch),
      defaultBranch: r.default_branch == null ? null : String(r.default_branch),
      testsTotal: Number(r.tests_total),
      testsBad: Number(r.tests_bad),
    }),
  );
  const tests = new Map<string, string>();
  if (runs.length === 0) return { runs, tests };
  const ids = runs.map((r) => r.runId);
  const letter = `CASE run_id ${ids.map((_, i) => `WHEN ? THEN '${runLetter(i)}'`).join(" ")} END`;
  // Both backends aggregate text, under their own names; the order is not asked for (the letters say it).
  const agg = store.kind === "postgres" ? "string_agg" : "group_concat";
  const found = await store.all(
    `SELECT file, name, ${agg}(${letter} || status, ',') AS past FROM tests ` +
      `WHERE run_id IN (${ids.map(() => "?").join(", ")}) GROUP BY file, name`,
    [...ids, ...ids],
  );
  for (const row of found) {
    const file = String(row.file);
    if (files.has(file)) tests.set(testKey(file, String(row.name)), String(row.past));
  }
  return { runs, tests };
}

/** An outcome with only what the flip rate looks at (status, attempts, the run). */
function pastOutcome(run: HistoryRunFacts, status: string, attempts: number): Outcome {
  return {
    run,
    status,
    attempts,
    durationMs: 0,
    failureKind: null,
    failureLine: null,
    costUsd: null,
    quarantined: false,
  };
}

/** A test's past outcomes from its {@link PastStrips.tests} text, oldest first, each with its run's position. */
function pastOf(past: PastStrips, text: string): { at: number; outcome: Outcome }[] {
  if (text === "") return [];
  const out = text.split(",").map((part) => {
    const at = part.charCodeAt(0) - 97;
    return { at, outcome: pastOutcome(past.runs[at]!, part.slice(1), 1) };
  });
  return out.sort((a, b) => a.at - b.at);
}

/** The strip of a test's past (its {@link PastStrips.tests} text) and this run's outcome `now`. */
function stripFrom(past: PastStrips, text: string, now: Outcome) {
  const kept = [...pastOf(past, text), { at: past.runs.length, outcome: now }].slice(-STRIP_LENGTH);
  const facts = flakiness(kept.map((s) => s.outcome));
  const statuses = kept.map((s) => s.outcome.status);
  return { at: kept.map((s) => s.at), statuses, flipRate: facts.flipRate, runs: facts.runs };
}

/**
 * The page's history for `report`: its strips are the past's outcomes plus the report's own status, the newest
 * `STRIP_LENGTH`, and the flip rate is `history --flaky`'s ({@link flakiness}) over them.
 */
export function htmlHistory(past: PastStrips, report: RunReport) {
  const row = runRow(report, { sha: null, branch: null, defaultBranch: null }, "run");
  const now: HistoryRunFacts = {
    ...{ runId: report.runId, startedAt: report.startedAt, sha: null, branch: null, defaultBranch: null },
    ...{ testsTotal: Number(row.tests_total), testsBad: Number(row.tests_bad) },
  };
  const runs = [...past.runs.map((r) => r.runId), report.runId];
  // Most tests share a past (always passed): the strip of each distinct past and status is worked out once.
  const memo = new Map<string, ReturnType<typeof stripFrom>>();
  const strip = (file: string, name: string, status: string, attempts: number) => {
    const text = past.tests.get(testKey(file, name)) ?? "";
    const key = `${attempts}${status}|${text}`;
    let found = memo.get(key);
    if (found === undefined) memo.set(key, (found = stripFrom(past, text, pastOutcome(now, status, attempts))));
    return found;
  };
  return { runs, strip };
}
