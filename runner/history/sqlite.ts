/** The history in one SQLite file through `bun:sqlite` (WAL; writers wait a bounded time for each other). */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { FILE_COLUMNS, fileRows, pendingMigrations, RUN_COLUMNS, TEST_COLUMNS } from "./schema.ts";
import type { Cell, RunRow, TestRow } from "./schema.ts";
import { HISTORY_SCHEMA_VERSION } from "./schema.ts";
import { flatCells, insertSql, LOCK_WAIT_MS, PRUNED_RUNS_SQL, type HistoryStore, type Row } from "./store.ts";

type Params = Cell[];

/** Opens (creating) the SQLite history at `file` and migrates it. */
export function openSqlite(file: string): HistoryStore {
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file, { create: true, strict: true });
  try {
    db.exec(`PRAGMA busy_timeout = ${LOCK_WAIT_MS}`);
    db.exec("PRAGMA journal_mode = WAL");
    migrate(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return new SqliteStore(db);
}

/** Runs the pending migrations in one write transaction, so two processes never both migrate. */
function migrate(db: Database): void {
  db.transaction(() => {
    const has = db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
    const row = has
      ? (db.query("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | null)
      : null;
    const pending = pendingMigrations(row ? Number(row.value) : 0);
    for (const statements of pending) for (const sql of statements) db.exec(sql);
    if (pending.length > 0)
      db.query("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)").run(
        String(HISTORY_SCHEMA_VERSION),
      );
  }).immediate();
}

class SqliteStore implements HistoryStore {
  readonly kind = "sqlite" as const;
  constructor(private readonly db: Database) {}

  async append(run: RunRow, tests: readonly TestRow[]): Promise<boolean> {
    return this.db
      .transaction(() => {
        if (this.db.query("SELECT 1 FROM runs WHERE run_id = ?").get(run.run_id as string)) return false;
        this.db.query(insertSql("runs", RUN_COLUMNS, 1)).run(...flatCells([run], RUN_COLUMNS));
        // One prepared statement run per row: faster in bun:sqlite than multi-row statements of many parameters.
        const test = this.db.prepare(insertSql("tests", TEST_COLUMNS, 1));
        for (const row of tests) test.run(...flatCells([row], TEST_COLUMNS));
        const file = this.db.prepare(insertSql("files", FILE_COLUMNS, 1));
        for (const row of fileRows(tests)) file.run(...flatCells([row], FILE_COLUMNS));
        return true;
      })
      .immediate();
  }

  async all(sql: string, params: readonly Cell[] = []): Promise<Row[]> {
    return this.db.query(sql).all(...(params as Params)) as Row[];
  }

  async prune(keep: number): Promise<number> {
    return this.db
      .transaction(() => {
        const gone = this.db.query(PRUNED_RUNS_SQL).all(keep) as { run_id: string }[];
        for (const { run_id } of gone) {
          this.db.query("DELETE FROM tests WHERE run_id = ?").run(run_id);
          this.db.query("DELETE FROM files WHERE run_id = ?").run(run_id);
          this.db.query("DELETE FROM runs WHERE run_id = ?").run(run_id);
        }
        return gone.length;
      })
      .immediate();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
