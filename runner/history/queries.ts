/** The history's questions (docs/history.md, "Questions"): rows read through the store, answers from classify.ts. */
import type { Cell } from "./schema.ts";
import type { HistoryStore, Row } from "./store.ts";
import { failingSince, flakiness, isFlaky, type FlakyFacts, type Outcome, type HistoryRunFacts } from "./classify.ts";
import { testKey } from "./rows.ts";

/** Which runs a question looks at. */
export interface RunFilter {
  branch?: string | null;
  /** The newest N runs (after the other filters). */
  last: number;
  /** ISO date or time: runs started at or after it. */
  since?: string | null;
}

/** One test's outcomes, oldest first. */
export interface TestOutcomes {
  key: string;
  file: string;
  name: string;
  outcomes: Outcome[];
}

const num = (v: Cell | undefined) => (v == null ? null : Number(v));
const str = (v: Cell | undefined) => (v == null ? null : String(v));

/** A `runs` row as the rules see it. */
function runFacts(r: Row): HistoryRunFacts {
  return {
    runId: String(r.run_id),
    startedAt: String(r.started_at),
    sha: str(r.git_sha),
    branch: str(r.git_branch),
    defaultBranch: str(r.default_branch),
    testsTotal: Number(r.tests_total),
    testsBad: Number(r.tests_bad),
  };
}

/** The runs `filter` selects, oldest first, with every column of `runs`. */
export async function selectRuns(store: HistoryStore, filter: RunFilter): Promise<Row[]> {
  const where: string[] = [];
  const params: Cell[] = [];
  if (filter.branch) {
    where.push("git_branch = ?");
    params.push(filter.branch);
  }
  if (filter.since) {
    where.push("started_at >= ?");
    params.push(filter.since);
  }
  const sql =
    `SELECT * FROM runs ${where.length > 0 ? `WHERE ${where.join(" AND ")} ` : ""}` +
    "ORDER BY started_at DESC, run_id DESC LIMIT ?";
  const rows = await store.all(sql, [...params, filter.last]);
  return rows.reverse();
}

/** A test named by file and name, as the `tests` table keys it. */
export interface TestRef {
  file: string;
  name: string;
}

/** Tests per query of {@link loadOutcomes}' `only`: two parameters each, within both backends' limits. */
const REFS_PER_QUERY = 400;

/** The `tests` rows of `runIds`, all of them or only those of the tests `only` names (fetched in chunks). */
async function testRowsOf(store: HistoryStore, runIds: string[], only?: readonly TestRef[]): Promise<Row[]> {
  const inRuns = `run_id IN (${runIds.map(() => "?").join(", ")})`;
  if (only === undefined) return store.all(`SELECT * FROM tests WHERE ${inRuns}`, runIds);
  const rows: Row[] = [];
  for (let i = 0; i < only.length; i += REFS_PER_QUERY) {
    const chunk = only.slice(i, i + REFS_PER_QUERY);
    const pairs = chunk.map(() => "(?, ?)").join(", ");
    const params = [...runIds, ...chunk.flatMap((t) => [t.file, t.name])];
    rows.push(
      ...(await store.all(`SELECT * FROM tests WHERE ${inRuns} AND (file, name) IN (VALUES ${pairs})`, params)),
    );
  }
  return rows;
}

/**
 * Every test's outcomes in the runs `filter` selects; `only` limits them to some tests, read by the database's
 * index rather than all rows (a run of 100,000 tests reads only the few it asks about).
 */
export async function loadOutcomes(
  store: HistoryStore,
  filter: RunFilter,
  only?: readonly TestRef[],
): Promise<TestOutcomes[]> {
  if (only?.length === 0) return [];
  const runs = await selectRuns(store, filter);
  if (runs.length === 0) return [];
  const facts = new Map(runs.map((r) => [String(r.run_id), runFacts(r)]));
  const order = new Map(runs.map((r, i) => [String(r.run_id), i]));
  const rows = await testRowsOf(
    store,
    runs.map((r) => String(r.run_id)),
    only,
  );
  const byKey = new Map<string, TestOutcomes>();
  for (const row of rows) {
    const key = testKey(String(row.file), String(row.name));
    let entry = byKey.get(key);
    if (!entry) byKey.set(key, (entry = { key, file: String(row.file), name: String(row.name), outcomes: [] }));
    entry.outcomes.push(outcomeOf(row, facts.get(String(row.run_id))!));
  }
  for (const entry of byKey.values()) entry.outcomes.sort((a, b) => order.get(a.run.runId)! - order.get(b.run.runId)!);
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * Per-file durations for scheduling: each file's summed test durations in the newest selected run that had it, ms.
 * From the `files` table (one row per run and file, summed at append), so the rows read are files × runs.
 */
export async function fileDurationsOf(store: HistoryStore, filter: RunFilter): Promise<Map<string, number>> {
  const runs = await selectRuns(store, filter);
  const out = new Map<string, number>();
  if (runs.length === 0) return out;
  const ids = runs.map((r) => String(r.run_id));
  const rows = await store.all(
    `SELECT run_id, file, duration_ms AS ms FROM files WHERE run_id IN (${ids.map(() => "?").join(", ")})`,
    ids,
  );
  const order = new Map(ids.map((id, i) => [id, i]));
  const newest = new Map<string, number>();
  for (const row of rows) {
    const file = String(row.file);
    const at = order.get(String(row.run_id))!;
    if ((newest.get(file) ?? -1) > at) continue;
    newest.set(file, at);
    out.set(file, Number(row.ms));
  }
  return out;
}

/**
 * The SQL conditions on a test's rows of which every test in a question's answer has at least one: only the tests
 * with such a row (few: most rows are first-attempt passes) are read into JavaScript and classified there.
 */
export const ANSWER_CANDIDATES = {
  /** Flaky (certain or likely) needs a failure or a retried pass. */
  flaky: "status <> 'passed' OR attempts > 1",
  /** Failing now needs a failure. */
  failing: "status IN ('failed', 'timed-out', 'crashed')",
} as const;

/** The tests with a row in the runs `filter` selects that meets `condition` (the database filters the rows). */
export async function testsWhere(store: HistoryStore, filter: RunFilter, condition: string): Promise<TestRef[]> {
  const runs = await selectRuns(store, filter);
  if (runs.length === 0) return [];
  const ids = runs.map((r) => String(r.run_id));
  const rows = await store.all(
    `SELECT DISTINCT file, name FROM tests WHERE run_id IN (${ids.map(() => "?").join(", ")}) AND (${condition})`,
    ids,
  );
  return rows.map((r) => ({ file: String(r.file), name: String(r.name) }));
}

/**
 * The tests that could be flaky in the selected runs: any outcome other than a first-attempt pass. Every other test
 * passed each time, so the flakiness rules need no more of its rows.
 */
export function flakyCandidates(store: HistoryStore, filter: RunFilter): Promise<TestRef[]> {
  return testsWhere(store, filter, ANSWER_CANDIDATES.flaky);
}

/** Every test the history holds whose name or key `matches` (read from the (file, name) index, not the rows). */
export async function testsNamed(store: HistoryStore, matches: (ref: TestRef) => boolean): Promise<TestRef[]> {
  const rows = await store.all("SELECT DISTINCT file, name FROM tests");
  return rows.map((r) => ({ file: String(r.file), name: String(r.name) })).filter(matches);
}

/** A `tests` row as an outcome of `run`. */
function outcomeOf(row: Row, run: HistoryRunFacts): Outcome {
  return {
    run,
    status: String(row.status),
    attempts: Number(row.attempts),
    durationMs: Number(row.duration_ms),
    failureKind: str(row.failure_kind),
    failureLine: str(row.failure_line),
    costUsd: num(row.cost_usd),
    quarantined: Number(row.quarantined) === 1,
  };
}

/** A flaky test's entry of `history --flaky`. */
export interface FlakyAnswer extends Omit<FlakyFacts, "firstFlip" | "lastFlip"> {
  test: string;
  file: string;
  name: string;
  lastFlip: { runId: string; startedAt: string } | null;
  firstSeen: { runId: string; startedAt: string } | null;
}

const runRef = (run: HistoryRunFacts | null | undefined) =>
  run ? { runId: run.runId, startedAt: run.startedAt } : null;

/** The flaky tests (certain or likely), highest flip rate first. */
export function flakyAnswers(tests: readonly TestOutcomes[]): FlakyAnswer[] {
  const out: FlakyAnswer[] = [];
  for (const t of tests) {
    const { firstFlip, lastFlip, ...facts } = flakiness(t.outcomes);
    if (!isFlaky(facts.verdict)) continue;
    const firstBad = t.outcomes.find((o) => o.status !== "passed" || o.attempts > 1)?.run;
    out.push({
      test: t.key,
      file: t.file,
      name: t.name,
      ...facts,
      lastFlip: runRef(lastFlip),
      firstSeen: runRef(firstFlip && firstBad && firstBad.startedAt > firstFlip.startedAt ? firstFlip : firstBad),
    });
  }
  return out.sort((a, b) => b.flipRate - a.flipRate || (a.test < b.test ? -1 : 1));
}

/** A failing test's entry of `history --failing`. */
export interface FailingAnswer {
  test: string;
  file: string;
  name: string;
  status: string;
  since: { runId: string; startedAt: string };
  runs: number;
  failureLine: string | null;
  /** The rules also call it flaky. */
  flaky: boolean;
}

/** The tests whose newest decisive outcome failed, longest failing first. */
export function failingAnswers(tests: readonly TestOutcomes[]): FailingAnswer[] {
  const out: FailingAnswer[] = [];
  for (const t of tests) {
    const failing = failingSince(t.outcomes);
    if (!failing) continue;
    const last = t.outcomes[t.outcomes.length - 1]!;
    out.push({
      test: t.key,
      file: t.file,
      name: t.name,
      status: last.status,
      since: runRef(failing.since.run)!,
      runs: failing.runs,
      failureLine: last.failureLine,
      flaky: isFlaky(flakiness(t.outcomes).verdict),
    });
  }
  return out.sort((a, b) => b.runs - a.runs || (a.test < b.test ? -1 : 1));
}

/** A test's trend of one measure: the newest value, the window's mean, and the newest over the older mean. */
export interface TrendAnswer {
  test: string;
  latest: number;
  mean: number;
  /** Newest value over the mean of the values before it; null with one value. */
  growth: number | null;
}

/** The largest and the fastest-growing tests by `measure` (duration, cost); `top` of each. */
export function trendAnswers(
  tests: readonly TestOutcomes[],
  measure: (o: Outcome) => number | null,
  top: number,
): { largest: TrendAnswer[]; growing: TrendAnswer[] } {
  const all: TrendAnswer[] = [];
  for (const t of tests) {
    const values = t.outcomes.map(measure).filter((v): v is number => v !== null);
    if (values.length === 0) continue;
    const latest = values[values.length - 1]!;
    const before = values.slice(0, -1);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const priorMean = before.length === 0 ? 0 : before.reduce((a, b) => a + b, 0) / before.length;
    all.push({ test: t.key, latest, mean, growth: before.length === 0 || priorMean === 0 ? null : latest / priorMean });
  }
  const largest = [...all].sort((a, b) => b.latest - a.latest).slice(0, top);
  const growing = all
    .filter((a) => a.growth !== null && a.growth > 1)
    .sort((a, b) => b.growth! - a.growth!)
    .slice(0, top);
  return { largest, growing };
}
