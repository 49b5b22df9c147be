/**
 * The tests `history --slow` and `--cost` can list (docs/history.md, "Questions"), found from per-test sums the
 * database makes and each test's newest value, so only those tests' rows are read and ranked in JavaScript.
 */
import { type RunFilter, selectRuns, type TestRef } from "./queries.ts";
import { testKey } from "./rows.ts";
import type { HistoryStore } from "./store.ts";

/** Relative slack on the database's growth, whose sums are added in another order than JavaScript's. */
const SLACK = 1e-6;

/** One test's figures of a measure in the selected runs: values, their sum and the newest value. */
interface TestSums {
  ref: TestRef;
  n: number;
  total: number;
  latest: number | null;
}

/** Per test with a value of `column`: its count and sum over `ids` (one GROUP BY in the database). */
async function sumsOf(store: HistoryStore, ids: readonly string[], column: string): Promise<Map<string, TestSums>> {
  const rows = await store.all(
    `SELECT file, name, COUNT(${column}) AS n, SUM(${column}) AS total FROM tests ` +
      `WHERE run_id IN (${ids.map(() => "?").join(", ")}) GROUP BY file, name HAVING COUNT(${column}) > 0`,
    [...ids],
  );
  const out = new Map<string, TestSums>();
  for (const r of rows) {
    const ref = { file: String(r.file), name: String(r.name) };
    out.set(testKey(ref.file, ref.name), { ref, n: Number(r.n), total: Number(r.total), latest: null });
  }
  return out;
}

/** Sets each test's newest value of `column`, reading one run at a time, newest first, until every test has one. */
async function fillLatest(store: HistoryStore, ids: readonly string[], column: string, sums: Map<string, TestSums>) {
  let missing = sums.size;
  for (let i = ids.length - 1; i >= 0 && missing > 0; i--) {
    const rows = await store.all(
      `SELECT file, name, ${column} AS v FROM tests WHERE run_id = ? AND ${column} IS NOT NULL`,
      [ids[i]!],
    );
    for (const r of rows) {
      const s = sums.get(testKey(String(r.file), String(r.name)));
      if (!s || s.latest !== null) continue;
      s.latest = Number(r.v);
      missing--;
    }
  }
}

/** The entries whose `value` is at least the `top`-th largest's times `factor` (all of them when fewer). */
function atLeastTopth<T>(entries: readonly T[], value: (t: T) => number, top: number, factor: number): T[] {
  if (entries.length <= top) return [...entries];
  const bar = [...entries].map(value).sort((a, b) => b - a)[top - 1]! * factor;
  return entries.filter((t) => value(t) >= bar);
}

/**
 * The tests that can be among the `top` largest by newest value of `column` or the `top` fastest-growing (newest
 * over the mean before it): ties and the sums' rounding kept in, so ranking their rows gives the whole answer.
 */
export async function trendCandidates(
  store: HistoryStore,
  filter: RunFilter,
  column: "duration_ms" | "cost_usd",
  top: number,
): Promise<TestRef[]> {
  const runs = await selectRuns(store, filter);
  if (runs.length === 0 || top <= 0) return [];
  const ids = runs.map((r) => String(r.run_id));
  const sums = await sumsOf(store, ids, column);
  await fillLatest(store, ids, column, sums);
  const all = [...sums.values()].filter((s) => s.latest !== null);
  const growth = (s: TestSums) => s.latest! / ((s.total - s.latest!) / (s.n - 1));
  const growing = all.filter((s) => s.n > 1 && growth(s) > 1 - SLACK);
  // A newest value far above the rest leaves the sum minus it to rounding: such a test is always kept.
  const unsure = all.filter((s) => s.n > 1 && !(Math.abs(s.total - s.latest!) * 1e6 > Math.abs(s.latest!)));
  const keep = new Set([
    ...atLeastTopth(all, (s) => s.latest!, top, 1),
    ...atLeastTopth(growing, growth, top, 1 - SLACK),
    ...unsure,
  ]);
  return [...keep].map((s) => s.ref);
}
