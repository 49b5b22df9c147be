/**
 * Looks at processes without touching them: liveness, /proc/<pid>/stat, descendants, and the
 * environment scan behind the cookie sweeps. Signals go out from exec/process.ts; /proc is parsed by
 * child/proc-reader.ts, shared with the child preload.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import {
  childrenOf,
  commandLine,
  liveThread as liveThreadIn,
  parseProcMemory,
  parseSchedstatNs,
  procFilesOf,
  procStat,
  walkDescendants,
  type Descendant,
  type ProcStat,
} from "../child/proc-reader.ts";

export type { Descendant, ProcStat };

const FILES = procFilesOf({ readdirSync, readFileSync });

/** Reads /proc/<pid>/stat (Linux). Null when there is no such process or no /proc. */
export function readProcStat(pid: number): ProcStat | null {
  return procStat(FILES, pid);
}

/** A process with this pid exists (signal 0; EPERM counts as alive, so does a zombie). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Live descendants of `pid`, breadth first, at most `max`; empty off Linux or when `pid` is gone.
 * Synchronous, so the tree cannot move under a caller holding the process still (docs/bun-behaviour.md,
 * "The child preload").
 */
export function listDescendants(pid: number, max: number): Descendant[] {
  if (process.platform !== "linux") return [];
  return walkDescendants(FILES, pid, max);
}

/** A live process and one of its environment entries. */
export interface EnvProcess {
  pid: number;
  command: string;
  /** Its process group id; null when unknown. */
  pgid: number | null;
  /** The first environment entry that matched. */
  entry: string;
  env: Map<string, string>;
}

/**
 * Live processes, other than this one and its ancestors, with an environment entry equal to or starting
 * with `needle`, newest pid first; unreadable ones are skipped. Linux reads /proc, macOS `ps eww`.
 * `forkedSince`: an ancestor of every process sought, so on Linux only pids since it are read.
 */
export function processesWithEnv(needle: string, match: "exact" | "prefix", forkedSince?: number): EnvProcess[] {
  const spared = ancestry();
  const hits: EnvProcess[] = [];
  const test = (entry: string) => (match === "exact" ? entry === needle : entry.startsWith(needle));
  if (process.platform === "linux") {
    // Only processes started since the shard child, taken from the /proc listing and never probed pid by
    // pid: looking up a dead thread id with cached /proc entries costs kernel time (bench/README.md,
    // "Where the time goes").
    const before = lastPid();
    const names = readdirSync("/proc");
    // Read after the listing, so every listed pid was allocated by then.
    const since = forkedSince === undefined ? null : pidsSince(forkedSince);
    const pids = names
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .filter((pid) => !since || (pid >= since.first && pid <= since.last));
    // Newest first: a short-lived fork relay is then read moments after the listing, while it still exists.
    pids.sort((a, b) => b - a);
    const found = new Set<number>();
    const look = (pid: number) => {
      if (spared.has(pid) || found.has(pid)) return;
      const hit = cookieProcess(pid, needle, test);
      if (hit === null) return;
      found.add(pid);
      hits.push(hit);
    };
    for (const pid of pids) look(pid);
    // A fork relay outruns a scan, so while pids were allocated since the last look the newest few are read by number.
    let seen = before;
    for (let round = 0; round < PROBE_ROUNDS && seen !== null; round++) {
      const last = lastPid();
      if (last === null || last === seen) break;
      const low = last > seen ? Math.max(seen, last - NEWEST_PROBES) : last - NEWEST_PROBES;
      for (let pid = last + 2; pid > low && pid > 0; pid--) look(pid);
      seen = last;
    }
    return hits;
  }
  const ps = spawnSync("ps", ["eww", "-A", "-o", "pid=,pgid=,command="], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    timeout: 10_000,
  });
  for (const line of (ps.stdout ?? "").split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    if (spared.has(pid)) continue;
    const words = m[3]!.split(/\s+/);
    const entry = words.find(test);
    if (entry === undefined) continue;
    hits.push({
      pid,
      command: m[3]!.slice(0, 200),
      pgid: Number(m[2]),
      entry,
      env: toEnvMap(words.filter((w) => w.includes("="))),
    });
  }
  return hits;
}

/** Pids read by number per round after a scan that saw new forks, and the rounds. */
const NEWEST_PROBES = 8;
const PROBE_ROUNDS = 4;

/** The pid allocated last (`ns_last_pid`); null when unreadable. */
function lastPid(): number | null {
  try {
    const last = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));
    return Number.isInteger(last) ? last : null;
  } catch {
    return null;
  }
}

/** The process `pid` when an environment entry passes `test` (`needle` a cheap substring check), else null. */
function cookieProcess(pid: number, needle: string, test: (entry: string) => boolean): EnvProcess | null {
  try {
    // environ first: most processes do not match, so stat and cmdline are read only for the few that do.
    let source = pid;
    let raw: string;
    let stat: ProcStat | null = null;
    try {
      raw = readFileSync(`/proc/${pid}/environ`, "utf8");
    } catch (error) {
      // ESRCH for a process whose leader thread exited while others run: read through a live thread.
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") return null;
      stat = readProcStat(pid);
      const thread = stat?.state === "Z" ? liveThread(pid) : null;
      if (thread === null) return null;
      source = thread;
      raw = readFileSync(`/proc/${thread}/environ`, "utf8");
    }
    if (!raw.includes(needle)) return null;
    const entries = raw.split("\0");
    const entry = entries.find(test);
    if (entry === undefined) return null;
    stat ??= readProcStat(pid);
    if (stat === null || stat.state === "X" || (stat.state === "Z" && source === pid)) return null;
    let command = readFileSync(`/proc/${source}/cmdline`, "utf8").split("\0").join(" ").trim().slice(0, 200);
    // Empty for a process caught as it exits: its name, as ps shows it.
    if (command === "") command = `[${readFileSync(`/proc/${pid}/comm`, "utf8").trim()}]`;
    return { pid, command, pgid: stat.pgid, entry, env: toEnvMap(entries) };
  } catch {
    // Exited while we looked, or not ours to read.
    return null;
  }
}

/** A thread of `pid` that is neither a zombie nor dead, or null (child/proc-reader.ts `liveThread`). */
export function liveThread(pid: number): number | null {
  return liveThreadIn(FILES, pid);
}

/**
 * Pids allocated since `first` (Linux allocates upward and wraps at pid_max), or null to read everything
 * when `ns_last_pid` is unreadable or wrapped: a full scan is the largest cost of a short shard (bench/README.md).
 */
function pidsSince(first: number): { first: number; last: number } | null {
  try {
    const last = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));
    if (!Number.isInteger(last) || last < first) return null;
    return { first, last };
  } catch {
    return null;
  }
}

function toEnvMap(entries: string[]): Map<string, string> {
  const env = new Map<string, string>();
  for (const entry of entries) {
    const eq = entry.indexOf("=");
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}

/** This process and its ancestors, never swept (nested runs); ancestors can only go away, so read once. */
function ancestry(): Set<number> {
  ancestors ??= readAncestry();
  return ancestors;
}
let ancestors: Set<number> | undefined;

/** The process groups of this process and its ancestors (Linux), never signalled by a sweep. */
export function sparedGroups(): Set<number> {
  if (spareGroups === undefined) {
    spareGroups = new Set<number>();
    for (const pid of ancestry()) {
      const pgid = readProcStat(pid)?.pgid;
      if (pgid !== undefined) spareGroups.add(pgid);
    }
  }
  return spareGroups;
}
let spareGroups: Set<number> | undefined;

function readAncestry(): Set<number> {
  const pids = new Set<number>([process.pid]);
  let pid = process.ppid;
  for (let i = 0; i < 64 && pid > 1; i++) {
    pids.add(pid);
    const stat = readProcStat(pid);
    if (stat === null) break;
    pid = stat.ppid;
  }
  return pids;
}

/** The CPU fields of /proc/<pid>/stat with state, parent and start time. */
export type ProcUsage = ProcStat;

/** {@link readProcStat}, named for the accounting's reads of CPU ticks. */
export function readProcUsage(pid: number): ProcUsage | null {
  return procStat(FILES, pid);
}

/** Resident set size now and its high-water mark (VmRSS, VmHWM), bytes; null when gone or without memory. */
export function readProcMemory(pid: number): { rssBytes: number; hwmBytes: number } | null {
  const text = FILES.read(`/proc/${pid}/status`);
  return text === null ? null : parseProcMemory(text);
}

/** Child pids of every thread of `pid` (empty when it is gone). */
export function childPids(pid: number): number[] {
  return childrenOf(FILES, pid);
}

/** CPU time all threads of `pid` have run, ns (schedstat), or null when unreadable. */
export function runtimeNs(pid: number): number | null {
  const tids = FILES.list(`/proc/${pid}/task`);
  if (tids === null) return null;
  let sum = 0;
  for (const tid of tids) {
    const text = FILES.read(`/proc/${tid}/schedstat`);
    if (text !== null) sum += parseSchedstatNs(text);
  }
  return sum;
}

/** A live process (not a zombie) with its group and command line; null otherwise. */
export function liveProcess(pid: number): Descendant | null {
  const stat = procStat(FILES, pid);
  if (stat === null || stat.state === "Z" || stat.state === "X") return null;
  const cmdline = FILES.read(`/proc/${pid}/cmdline`);
  return cmdline === null ? null : { pid, pgid: stat.pgid, command: commandLine(cmdline) };
}
