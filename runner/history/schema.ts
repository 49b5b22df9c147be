/**
 * The history's tables (docs/history.md, "Schema"): one DDL for SQLite and PostgreSQL, so both answer the same
 * queries. Migrations run in order; `meta.schema_version` says how many have run.
 */

/** Version a history written by this code has; an older one is migrated in place, a newer one refused. */
export const HISTORY_SCHEMA_VERSION = 2;

/** Statements of each migration, index 0 taking an empty database to version 1. */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    `CREATE TABLE IF NOT EXISTS runs (
      run_id TEXT PRIMARY KEY,
      started_at TEXT NOT NULL,
      finished_at TEXT,
      exit_code INTEGER,
      completed INTEGER NOT NULL,
      bun_version TEXT,
      git_sha TEXT,
      git_branch TEXT,
      default_branch TEXT,
      slice TEXT,
      preset TEXT,
      tier TEXT,
      settings TEXT NOT NULL,
      tests_total BIGINT NOT NULL,
      tests_bad BIGINT NOT NULL,
      source TEXT NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS tests (
      run_id TEXT NOT NULL,
      file TEXT NOT NULL,
      name TEXT NOT NULL,
      status TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      duration_ms DOUBLE PRECISION NOT NULL,
      failure_kind TEXT,
      failure_line TEXT,
      shard_wall_ms DOUBLE PRECISION,
      shard_cpu_ms DOUBLE PRECISION,
      shard_peak_rss BIGINT,
      cost_usd DOUBLE PRECISION,
      quarantined INTEGER NOT NULL
    )`,
    "CREATE INDEX IF NOT EXISTS tests_by_run ON tests (run_id)",
    "CREATE INDEX IF NOT EXISTS tests_by_test ON tests (file, name)",
    "CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at)",
  ],
  // Version 2: per-file sums, so a run's scheduling reads one row per file, not one per test.
  [
    `CREATE TABLE IF NOT EXISTS files (
      run_id TEXT NOT NULL,
      file TEXT NOT NULL,
      duration_ms DOUBLE PRECISION NOT NULL,
      tests BIGINT NOT NULL
    )`,
    "CREATE INDEX IF NOT EXISTS files_by_run ON files (run_id)",
    "INSERT INTO files (run_id, file, duration_ms, tests) " +
      "SELECT run_id, file, SUM(duration_ms), COUNT(*) FROM tests GROUP BY run_id, file",
  ],
];

/** Columns of `runs` in insert order. */
export const RUN_COLUMNS = [
  "run_id",
  "started_at",
  "finished_at",
  "exit_code",
  "completed",
  "bun_version",
  "git_sha",
  "git_branch",
  "default_branch",
  "slice",
  "preset",
  "tier",
  "settings",
  "tests_total",
  "tests_bad",
  "source",
] as const;

/** Columns of `tests` in insert order. */
export const TEST_COLUMNS = [
  "run_id",
  "file",
  "name",
  "status",
  "attempts",
  "duration_ms",
  "failure_kind",
  "failure_line",
  "shard_wall_ms",
  "shard_cpu_ms",
  "shard_peak_rss",
  "cost_usd",
  "quarantined",
] as const;

/** Columns of `files` in insert order. */
export const FILE_COLUMNS = ["run_id", "file", "duration_ms", "tests"] as const;

/** A value a column holds. */
export type Cell = string | number | null;
/** One `runs` row, by column. */
export type RunRow = Record<(typeof RUN_COLUMNS)[number], Cell>;
/** One `tests` row, by column. */
export type TestRow = Record<(typeof TEST_COLUMNS)[number], Cell>;
/** One `files` row, by column. */
export type FileRow = Record<(typeof FILE_COLUMNS)[number], Cell>;

/** The `files` rows of a run's tests: each file's summed duration (ms) and test count. */
export function fileRows(tests: readonly TestRow[]): FileRow[] {
  const byFile = new Map<string, FileRow>();
  for (const t of tests) {
    const file = String(t.file);
    const row = byFile.get(file) ?? { run_id: t.run_id, file, duration_ms: 0, tests: 0 };
    row.duration_ms = Number(row.duration_ms) + Number(t.duration_ms);
    row.tests = Number(row.tests) + 1;
    byFile.set(file, row);
  }
  return [...byFile.values()];
}

/**
 * The migrations a database at `version` still needs.
 * @throws Error when the database is newer than this code
 */
export function pendingMigrations(version: number): readonly (readonly string[])[] {
  if (version > HISTORY_SCHEMA_VERSION)
    throw new Error(`its schema version ${version} is newer than this shardguard's ${HISTORY_SCHEMA_VERSION}`);
  return MIGRATIONS.slice(version);
}

/** Each `?` of `sql` as PostgreSQL's `$1`, `$2`, …; our queries hold no `?` inside strings. */
export function numberedParams(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
