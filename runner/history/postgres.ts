/** The history on a PostgreSQL server through Bun's built-in SQL client: the schema and queries of SQLite. */
import { SQL } from "bun";
import { FILE_COLUMNS, fileRows, HISTORY_SCHEMA_VERSION, numberedParams, pendingMigrations } from "./schema.ts";
import { RUN_COLUMNS, TEST_COLUMNS } from "./schema.ts";
import type { Cell, RunRow, TestRow } from "./schema.ts";
import {
  flatCells,
  INSERT_BATCH,
  insertSql,
  LOCK_WAIT_MS,
  PRUNED_RUNS_SQL,
  type HistoryStore,
  type Row,
} from "./store.ts";

/** Any number, so concurrent migrations of one database queue on the same advisory lock. */
const MIGRATION_LOCK = 736_436_001;

/** Connects to `url` and migrates the schema under an advisory lock. */
export async function openPostgres(url: string): Promise<HistoryStore> {
  const sql = new SQL({
    url,
    max: 2,
    connectionTimeout: LOCK_WAIT_MS / 1000,
    idleTimeout: 5,
  });
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = ${LOCK_WAIT_MS}`);
      await tx.unsafe(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
      const [has] = await tx.unsafe("SELECT to_regclass('meta') IS NOT NULL AS present");
      const row = has?.present ? (await tx.unsafe("SELECT value FROM meta WHERE key = 'schema_version'"))[0] : null;
      const pending = pendingMigrations(row ? Number(row.value) : 0);
      for (const statements of pending) for (const statement of statements) await tx.unsafe(statement);
      if (pending.length > 0)
        await tx.unsafe(
          "INSERT INTO meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
          [String(HISTORY_SCHEMA_VERSION)],
        );
    });
  } catch (error) {
    await sql.close({ timeout: 1 });
    throw error;
  }
  return new PostgresStore(sql);
}

class PostgresStore implements HistoryStore {
  readonly kind = "postgres" as const;
  constructor(private readonly sql: SQL) {}

  async append(run: RunRow, tests: readonly TestRow[]): Promise<boolean> {
    return await this.sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = ${LOCK_WAIT_MS}`);
      const inserted = await tx.unsafe(
        `${numberedParams(insertSql("runs", RUN_COLUMNS, 1))} ON CONFLICT (run_id) DO NOTHING RETURNING run_id`,
        flatCells([run], RUN_COLUMNS),
      );
      if (inserted.length === 0) return false;
      for (let i = 0; i < tests.length; i += INSERT_BATCH) {
        const batch = tests.slice(i, i + INSERT_BATCH);
        await tx.unsafe(numberedParams(insertSql("tests", TEST_COLUMNS, batch.length)), flatCells(batch, TEST_COLUMNS));
      }
      const files = fileRows(tests);
      for (let i = 0; i < files.length; i += INSERT_BATCH) {
        const batch = files.slice(i, i + INSERT_BATCH);
        await tx.unsafe(numberedParams(insertSql("files", FILE_COLUMNS, batch.length)), flatCells(batch, FILE_COLUMNS));
      }
      return true;
    });
  }

  async all(query: string, params: readonly Cell[] = []): Promise<Row[]> {
    const rows = await this.sql.unsafe(numberedParams(query), [...params]);
    return [...rows].map(plainRow);
  }

  async prune(keep: number): Promise<number> {
    return await this.sql.begin(async (tx) => {
      const gone = await tx.unsafe(numberedParams(PRUNED_RUNS_SQL), [keep]);
      const ids = [...gone].map((r) => (r as { run_id: string }).run_id);
      if (ids.length === 0) return 0;
      await tx.unsafe("DELETE FROM tests WHERE run_id = ANY($1)", [ids]);
      await tx.unsafe("DELETE FROM files WHERE run_id = ANY($1)", [ids]);
      await tx.unsafe("DELETE FROM runs WHERE run_id = ANY($1)", [ids]);
      return ids.length;
    });
  }

  async close(): Promise<void> {
    await this.sql.close({ timeout: 5 });
  }
}

/** A row with BIGINT columns as numbers (the client gives strings for them), as SQLite gives them. */
function plainRow(row: unknown): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row as Record<string, unknown>)) {
    out[k] = typeof v === "bigint" ? Number(v) : (v as Cell);
  }
  return out;
}
