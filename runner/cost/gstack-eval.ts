/**
 * gstack's eval results as a cost source (docs/cost.md, "Adapters"): the shape its EvalCollector writes to a
 * shard's eval directory (test/helpers/eval-store.ts of gstack), read as entries; pure.
 */

/** The collector's in-progress file in an eval directory, rewritten after every test. */
export const GSTACK_PARTIAL_FILE = "_partial-e2e.json";

/** One test entry of an eval result: what it spent, under gstack's own name for it. */
export interface EvalEntry {
  /** gstack's `name` (often not Bun's test name: "/review SQL injection"). */
  name: string;
  /** gstack's `suite`, often the describe block's name; "" when absent. */
  suite: string;
  usd: number;
  /** gstack's `tokens_used`; it does not split input from output. */
  tokens?: number;
  model?: string;
  turns?: number;
  exitReason?: string;
}

/** An eval result file read: its entries, or why it was refused. */
export type EvalReading = { ok: true; partial: boolean; entries: EvalEntry[] } | { ok: false; problem: string };

const nonNegative = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/**
 * Reads one eval result file's text (gstack's `EvalResult`: `tests[]` with `name`, `suite`, `cost_usd`,
 * `tokens_used`, `model`, `turns_used`, `exit_reason`). An entry without a `cost_usd` ≥ 0 counts as $0.
 */
export function readEvalResult(text: string): EvalReading {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return { ok: false, problem: "not JSON" };
  }
  const tests = (data as { tests?: unknown } | null)?.tests;
  if (typeof data !== "object" || data === null || !Array.isArray(tests))
    return { ok: false, problem: "no tests array" };
  const entries: EvalEntry[] = [];
  for (const raw of tests) {
    if (typeof raw !== "object" || raw === null) continue;
    const t = raw as Record<string, unknown>;
    const entry: EvalEntry = {
      name: typeof t.name === "string" ? t.name : "",
      suite: typeof t.suite === "string" ? t.suite : "",
      usd: nonNegative(t.cost_usd) ? t.cost_usd : 0,
    };
    if (nonNegative(t.tokens_used) && Number.isInteger(t.tokens_used)) entry.tokens = t.tokens_used;
    if (typeof t.model === "string" && t.model !== "") entry.model = t.model;
    if (nonNegative(t.turns_used)) entry.turns = t.turns_used;
    if (typeof t.exit_reason === "string") entry.exitReason = t.exit_reason;
    entries.push(entry);
  }
  return { ok: true, partial: Boolean((data as { _partial?: unknown })._partial), entries };
}

/**
 * The full test name `entry` is charged to among `names` (Bun's " > "-joined full names): the name itself,
 * `suite > name`, else the one name whose last part is `name`; null when none or several match.
 */
export function matchEvalEntry(entry: Pick<EvalEntry, "name" | "suite">, names: readonly string[]): string | null {
  if (entry.name === "") return null;
  if (names.includes(entry.name)) return entry.name;
  const withSuite = `${entry.suite} > ${entry.name}`;
  if (entry.suite !== "" && names.includes(withSuite)) return withSuite;
  const tail = ` > ${entry.name}`;
  const ending = names.filter((n) => n.endsWith(tail));
  return ending.length === 1 ? ending[0]! : null;
}

/** One eval entry read, with the test in flight when it was first seen (null: none, or read at the end). */
export interface SeenEvalEntry {
  entry: EvalEntry;
  inFlight: string | null;
}

/** What an attempt's eval directory said: its entries and the files it could not read. */
export interface EvalSpend {
  adapter: "gstack-eval";
  entries: SeenEvalEntry[];
  /** "x.json: not JSON": files refused, named in the shard's notes. */
  problems: string[];
}
