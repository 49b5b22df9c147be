/** What every history backend offers (sqlite.ts, postgres.ts): the same schema, the same queries. */
import type { HistoryTarget } from "../config/history-settings.ts";
import type { Cell, RunRow, TestRow } from "./schema.ts";

/** One result row of a query, by column name. */
export type Row = Record<string, Cell>;

export type { HistoryTarget };

/** An open history. Every method may throw; callers turn that into one note line. */
export interface HistoryStore {
  readonly kind: HistoryTarget["kind"];
  /** Adds a run and its tests in one transaction; false when a run of that id is there already. */
  append(run: RunRow, tests: readonly TestRow[]): Promise<boolean>;
  /** The rows of a query written with `?` parameters. */
  all(sql: string, params?: readonly Cell[]): Promise<Row[]>;
  /** Keeps the newest `keep` runs (by start) and their tests; returns how many runs went. */
  prune(keep: number): Promise<number>;
  close(): Promise<void>;
}

/** Bounded wait for a lock held by another writer (a slice of the same matrix), ms. */
export const LOCK_WAIT_MS = 15_000;

/** Rows of tests inserted per statement: within both backends' parameter limits. */
export const INSERT_BATCH = 2000;

/** The runs a prune removes: every one but the newest `keep`. */
export const PRUNED_RUNS_SQL =
  "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?)";

/** One multi-row INSERT of `count` rows into `table`. */
export function insertSql(table: string, columns: readonly string[], count: number): string {
  const row = `(${columns.map(() => "?").join(", ")})`;
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${Array(count).fill(row).join(", ")}`;
}

/** The rows' cells in column order, flat: the parameters of {@link insertSql}. */
export function flatCells<T extends Record<string, Cell>>(rows: readonly T[], columns: readonly (keyof T)[]): Cell[] {
  const out: Cell[] = [];
  for (const row of rows) for (const c of columns) out.push(row[c] ?? null);
  return out;
}
