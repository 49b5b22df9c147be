/** Opens a history by its target; each backend loads only when used. */
import type { HistoryStore, HistoryTarget } from "./store.ts";

/** Opens the history at `target`, migrated to this code's schema. */
export async function openStore(target: HistoryTarget): Promise<HistoryStore> {
  if (target.kind === "sqlite") return (await import("./sqlite.ts")).openSqlite(target.path);
  return (await import("./postgres.ts")).openPostgres(target.url);
}
