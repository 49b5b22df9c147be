/**
 * The run history's settings (docs/history.md): where it lives (`--history`, SHARDGUARD_HISTORY_URL, bunfig.toml
 * `history`; `--no-history` turns it off) and what is quarantined (bunfig.toml `quarantine`).
 */
import path from "node:path";
import type { ParsedWithExtras } from "./args.ts";
import type { BunfigTable } from "./load.ts";
import { ConfigError, showValue } from "./settings-schema.ts";

/** Where a history lives: a SQLite file, or a PostgreSQL server. */
export type HistoryTarget = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string };

/** The history and quarantine of a run. */
export interface HistorySettings {
  /** Null: no history (`--no-history`, `history = false`, `off`). */
  target: HistoryTarget | null;
  /** Test keys (`file > name`), or "auto": the history's flaky tests (docs/history.md, "Quarantine"). */
  quarantine: string[] | "auto";
}

const TARGET_ACCEPTED = "a postgres:// or postgresql:// URL, a path to a SQLite file, or off";
const QUARANTINE_ACCEPTED = '"auto" or an array of "FILE > TEST NAME" strings';

/** The history file when nothing names one. */
export const DEFAULT_HISTORY_FILE = "history.sqlite";

/**
 * A `--history` value: off, a PostgreSQL URL (checked), or a SQLite path relative to `base`.
 * @throws ConfigError naming the source, the value and what is accepted
 */
export function parseHistoryTarget(raw: unknown, source: string, base: string): HistoryTarget | null {
  if (raw === false || raw === "off") return null;
  if (typeof raw !== "string" || raw.trim() === "")
    throw new ConfigError(`invalid ${source} ${showValue(raw)}: expected ${TARGET_ACCEPTED}`);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: "sqlite", path: path.resolve(base, raw) };
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  const hasHost = url !== null && (url.hostname !== "" || url.searchParams.has("host"));
  if ((scheme !== "postgres" && scheme !== "postgresql") || !hasHost)
    throw new ConfigError(`invalid ${source} ${JSON.stringify(raw)}: expected ${TARGET_ACCEPTED}`);
  return { kind: "postgres", url: raw };
}

/**
 * The quarantine of bunfig.toml: "auto" or entries `FILE > NAME`.
 * @throws ConfigError naming the entry at fault
 */
export function parseQuarantine(raw: unknown, source: string): string[] | "auto" {
  if (raw === undefined) return [];
  if (raw === "auto") return "auto";
  if (!Array.isArray(raw))
    throw new ConfigError(`invalid ${source} ${showValue(raw)}: expected ${QUARANTINE_ACCEPTED}`);
  for (const entry of raw)
    if (typeof entry !== "string" || !/^\S.* > \S/.test(entry))
      throw new ConfigError(`invalid ${source} entry ${showValue(entry)}: expected ${QUARANTINE_ACCEPTED}`);
  return raw as string[];
}

/**
 * Resolves the history settings: flag > environment > bunfig.toml > `OUT/history.sqlite`.
 * @throws ConfigError for a bad value anywhere, even one a higher source overrides
 */
export function resolveHistorySettings(
  args: ParsedWithExtras,
  env: Record<string, string | undefined>,
  context: { cwd: string; root: string; out: string; bunfig: BunfigTable },
): HistorySettings {
  const where = (key: string) =>
    `${context.bunfig.file ? path.basename(context.bunfig.file) : "bunfig.toml"} [shardguard] ${key}`;
  const table = context.bunfig.table;
  const quarantine = parseQuarantine(table.quarantine, where("quarantine"));
  const fromToml = "history" in table ? parseHistoryTarget(table.history, where("history"), context.root) : undefined;
  const urlEnv = env.SHARDGUARD_HISTORY_URL || undefined;
  const fromEnv = urlEnv === undefined ? undefined : parseHistoryTarget(urlEnv, "SHARDGUARD_HISTORY_URL", context.cwd);
  const flag = args.extras.get("--history");
  const fromFlag = typeof flag === "string" ? parseHistoryTarget(flag, "--history", context.cwd) : undefined;
  const noEnv = env.SHARDGUARD_NO_HISTORY;
  if (noEnv && !["0", "1", "true", "false"].includes(noEnv))
    throw new ConfigError(`invalid SHARDGUARD_NO_HISTORY ${JSON.stringify(noEnv)}: expected 1, 0, true or false`);
  if (args.extras.get("--no-history") === true && fromFlag !== undefined)
    throw new ConfigError("--history and --no-history contradict each other; give one");
  const off =
    args.extras.get("--no-history") === true || (fromFlag === undefined && (noEnv === "1" || noEnv === "true"));
  const target = off
    ? null
    : fromFlag !== undefined
      ? fromFlag
      : fromEnv !== undefined
        ? fromEnv
        : fromToml !== undefined
          ? fromToml
          : { kind: "sqlite" as const, path: path.join(context.out, DEFAULT_HISTORY_FILE) };
  return { target, quarantine };
}
