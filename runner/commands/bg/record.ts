/**
 * The files of a background run: `OUT/bg/<id>.log` (header first, the sentinel last) and `OUT/bg/<id>.json`, its
 * record (docs/background.md, "The log and the sentinel"). A log without a sentinel whose process is gone is
 * "incomplete".
 */
import { readdirSync } from "node:fs";
import { readRegularTextSync } from "../../util/regular-file.ts";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { isAlive, readProcStat } from "../../exec/proc-inspect.ts";
import { writeFileAtomic } from "../../util/atomic.ts";

/** Exit codes of a background run, as its sentinel carries them. */
export const BG_EXIT = { passed: 0, failed: 1, other: 2, cancelled: 130 } as const;

/** What `status` calls a background run (docs/background.md, "`status`"). */
export type BgState = "running" | "passed" | "failed" | "cancelled" | "timed-out" | "error" | "incomplete";

/** How a run ended, written by the worker just before its sentinel. */
export interface BgEnding {
  /** The code the sentinel carries. */
  code: number;
  state: Exclude<BgState, "running" | "incomplete">;
  /** One line saying why, e.g. "cap of 600s reached". */
  why: string;
  /** The run's total spend in dollars (its report's `summary.cost.usd`, docs/cost.md); absent when none was recorded. */
  spentUsd?: number;
}

/** The record of one background run (`OUT/bg/<id>.json`). */
export interface BgRecord {
  id: string;
  backend: "local" | "dispatch";
  /** Absolute path of the log. */
  log: string;
  root: string;
  out: string;
  /** The lane lock the run holds while it runs. */
  lock: string;
  /** The detached process (its own process group); null until it has started. */
  pid: number | null;
  /** /proc start time of `pid` (Linux), so a recycled pid is not taken for the run. */
  procStart: string | null;
  startedAt: string;
  /** The shardguard run id once the run has started (its report: OUT/runs/<runId>/report.json). */
  runId: string | null;
  /** The followed CI run (dispatch backend). */
  ci: { repo: string; workflow: string; runId: number | null; url: string | null; nonce: string } | null;
  /** Written when the run ends (absent in records of older versions and while it runs). */
  ending?: BgEnding | null;
}

/** The sentinel line that ends every log: `### shardguard EXIT=<code> ###`. */
export function sentinelLine(code: number): string {
  return `### shardguard EXIT=${code} ###`;
}

/**
 * The code of the last sentinel in a log's text, or null. Only LF ends a line: multiline `^`/`$` also break at
 * CR, U+2028 and U+2029, which a printed test name may hold to forge `EXIT=0`.
 */
export function sentinelCode(logText: string): number | null {
  let code: number | null = null;
  for (const line of logText.split("\n")) {
    const m = /^### shardguard EXIT=(\d+) ###$/.exec(line);
    if (m) code = Number(m[1]);
  }
  return code;
}

/** The state word for a finished run's code: 0 passed, 1 failed, 130 cancelled, anything else error. */
export function stateForCode(code: number): BgEnding["state"] {
  return code === BG_EXIT.passed
    ? "passed"
    : code === BG_EXIT.failed
      ? "failed"
      : code === BG_EXIT.cancelled
        ? "cancelled"
        : "error";
}

/** A new background run id: `20261130T154226Z-1a2b3c-<label>`. */
export function newBgId(label: string, now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${stamp}-${randomBytes(3).toString("hex")}-${label}`;
}

/** `OUT/bg`. */
export const bgDir = (out: string) => path.join(out, "bg");
/** The record path that belongs to a log path (`x.log` → `x.json`). */
export const recordPathFor = (log: string) => `${log.replace(/\.log$/, "")}.json`;

/** Writes a record atomically next to its log. */
export async function writeRecord(record: BgRecord): Promise<void> {
  await writeFileAtomic(recordPathFor(record.log), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * Reads the record of a log (or of a record path).
 * @throws Error naming the file when missing or not a record
 */
export function readRecord(logOrRecord: string): BgRecord {
  const file = logOrRecord.endsWith(".json") ? logOrRecord : recordPathFor(logOrRecord);
  const parsed = JSON.parse(readRegularTextSync(file)) as BgRecord;
  if (typeof parsed.id !== "string" || typeof parsed.log !== "string")
    throw new Error(`${file} is not a shardguard bg record`);
  return parsed;
}

/**
 * Record paths under OUT/bg, oldest first; same-second ids by `startedAt`, so `status` picks the run started last.
 * A file that is not a record is left out.
 */
export function listRecords(out: string): string[] {
  let names: string[];
  try {
    names = readdirSync(bgDir(out)).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const startedAt = (name: string): number | null => {
    try {
      return Date.parse(readRecord(path.join(bgDir(out), name)).startedAt) || 0;
    } catch {
      return null; // Not a record (a stray or foreign .json): left out rather than crash `status`.
    }
  };
  const keyed = names.flatMap((name) => {
    const at = startedAt(name);
    return at === null ? [] : [{ name, second: name.split("-")[0]!, at }];
  });
  const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  keyed.sort((a, b) => byText(a.second, b.second) || a.at - b.at || byText(a.name, b.name));
  return keyed.map((k) => path.join(bgDir(out), k.name));
}

/** True while the record's process is the one that wrote it and is alive (not a zombie, not a recycled pid). */
export function recordAlive(record: BgRecord): boolean {
  if (record.pid === null) return false;
  if (!isAlive(record.pid)) return false;
  const stat = readProcStat(record.pid);
  if (stat === null) return true;
  if (stat.state === "Z" || stat.state === "X") return false;
  return record.procStart === null || record.procStart === stat.start;
}

/** The /proc start time of a pid (Linux), null elsewhere. */
export function procStartOf(pid: number): string | null {
  return readProcStat(pid)?.start ?? null;
}

/**
 * The state of a run: the sentinel's code (named by the record's ending for the same code: "timed-out"); else
 * running while its process lives or within `startGraceMs` of its start; else incomplete.
 */
export function bgState(
  record: BgRecord,
  logText: string,
  now = Date.now(),
  startGraceMs = 10_000,
): { state: BgState; code: number | null; why: string | null } {
  const code = sentinelCode(logText);
  if (code !== null) {
    const ending = record.ending?.code === code ? record.ending : null;
    return { state: ending?.state ?? stateForCode(code), code, why: ending?.why ?? null };
  }
  if (recordAlive(record)) return { state: "running", code: null, why: null };
  if (record.pid === null && now - Date.parse(record.startedAt) < startGraceMs)
    return { state: "running", code: null, why: null };
  return { state: "incomplete", code: null, why: null };
}

/** The run's total spend from its report copy (OUT/runs/<runId>/report.json), or null: none recorded, or no report. */
export function reportSpend(record: Pick<BgRecord, "out" | "runId">): number | null {
  if (!record.runId) return null;
  try {
    const report = JSON.parse(readRegularTextSync(path.join(record.out, "runs", record.runId, "report.json"))) as {
      summary?: { cost?: { usd?: unknown } };
    };
    const usd = report.summary?.cost?.usd;
    return typeof usd === "number" && Number.isFinite(usd) ? usd : null;
  } catch {
    return null;
  }
}
