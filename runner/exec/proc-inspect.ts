/**
 * Looking at processes without touching them: liveness, /proc/<pid>/stat,
 * descendants, and the environment scan behind the cookie sweeps. Signals
 * are sent by exec/process.ts (and the guardian it starts); this module only
 * reads. /proc is parsed by child/proc-reader.ts, the one parser, which the
 * child preload shares; this module gives it node:fs. The one liveness probe
 * of the runner (engine/lock.ts uses it too).
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

/** /proc through node:fs, synchronously. */
const FILES = procFilesOf({ readdirSync, readFileSync });

/** Reads /proc/<pid>/stat (Linux). Null when there is no such process or no /proc. */
export function readProcStat(pid: number): ProcStat | null {
  return procStat(FILES, pid);
}

/**
 * True when a process with this pid exists (signal 0 probe; EPERM, a
 * process of another user, counts as alive). A zombie counts as alive
 * here; callers that care read {@link readProcStat}.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The live descendants of `pid` (a zombie leader with a live thread counts
 * as live), breadth first, at most `max` (child/proc-reader.ts
 * `walkDescendants`). Linux only; empty elsewhere, or when `pid` is gone.
 * Synchronous, so the tree cannot move under a caller that holds the
 * process still (exec/shard.ts calls it while the shard child waits for the
 * end-of-run acknowledgement): about 0.1 ms for a child without
 * descendants, where the child preload's own listing costs the child about
 * 3 ms of CPU. Read then, the child's reap later costs the runner nothing
 * measurable (docs/bun-behaviour.md, "The child preload").
 */
export function listDescendants(pid: number, max: number): Descendant[] {
  if (process.platform !== "linux") return [];
  return walkDescendants(FILES, pid, max);
}

/** A live process and one of its environment entries. */
export interface EnvProcess {
  pid: number;
  /** Command line, cut to 200 characters. */
  command: string;
  /** Its process group id; null when unknown. */
  pgid: number | null;
  /** The first environment entry that matched. */
  entry: string;
  /** Every `NAME=value` entry of the process. */
  env: Map<string, string>;
}

/**
 * Lists live processes (excluding this one and its ancestors) with an
 * environment entry equal to, or starting with, `needle`; a process whose
 * leader thread is a zombie while another thread runs is live, and read
 * through that thread. Newest pid first. Linux
 * reads /proc/<pid>/environ; macOS reads `ps eww`. Processes that cannot be
 * read (other users) are skipped.
 *
 * @param forkedSince pid of a process that is an ancestor of every process
 *   sought (a shard child): on Linux only pids allocated since it are read,
 *   see {@link pidsSince}. Undefined reads every process.
 */
export function processesWithEnv(needle: string, match: "exact" | "prefix", forkedSince?: number): EnvProcess[] {
  const spared = ancestry();
  const hits: EnvProcess[] = [];
  const test = (entry: string) => (match === "exact" ? entry === needle : entry.startsWith(needle));
  if (process.platform === "linux") {
    // This runs after every shard, so only the processes started since the
    // shard child are read. They are taken from the listing of /proc (live
    // processes only), never probed pid by pid: a probe also looks up the
    // ids of the shard child's threads, dead by now, and on Linux 6.x the
    // lookup of a dead id whose /proc entries were cached (Bun's
    // --no-orphans reads its threads' `children` files as it exits) makes
    // the kernel walk and drop those entries under a spinlock: ~1-2 ms of
    // system time per shard on a busy 2-core machine, where one listing of
    // ~100 processes costs ~0.1-0.3 ms (bench/README.md).
    const before = lastPid();
    const names = readdirSync("/proc");
    // Read after the listing, so every listed pid was allocated by then.
    const since = forkedSince === undefined ? null : pidsSince(forkedSince);
    const pids = names
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .filter((pid) => !since || (pid >= since.first && pid <= since.last));
    // Newest first: a process that lives a few hundred microseconds (a fork
    // relay) is then read moments after the listing, while it still exists.
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
    // A fork relay outruns a scan: each pid it had when listed is gone by
    // the time it is read. While pids were allocated since the last look,
    // the newest few are read by number at once (a few rounds; never the
    // dead thread ids of a shard child, which were allocated before the
    // listing, when nothing forked since).
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

/** Pids read by number per round after a scan that saw new forks, and the rounds (see processesWithEnv). */
const NEWEST_PROBES = 8;
const PROBE_ROUNDS = 4;

/** `/proc/sys/kernel/ns_last_pid`: the pid allocated last; null when unreadable. */
function lastPid(): number | null {
  try {
    const last = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));
    return Number.isInteger(last) ? last : null;
  } catch {
    return null;
  }
}

/**
 * The process `pid` when its environment has an entry that passes `test`
 * (`needle` is a substring of that entry, the cheap first check), else null
 * (no such process, not ours to read, dead, or no such entry).
 */
function cookieProcess(pid: number, needle: string, test: (entry: string) => boolean): EnvProcess | null {
  try {
    // environ first: most processes do not match, so stat and cmdline
    // are read only for the few that do (this scan runs after every shard).
    let source = pid;
    let raw: string;
    let stat: ProcStat | null = null;
    try {
      raw = readFileSync(`/proc/${pid}/environ`, "utf8");
    } catch (error) {
      // ESRCH for a process whose leader thread exited (pthread_exit)
      // while others run (state Z, "Zl" in ps): its memory is read
      // through a live thread instead.
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
    // Empty for a process caught as it exits (a fork relay's member): its name, as ps shows it.
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
 * Linux hands out pids in increasing order and wraps at pid_max, so a
 * process forked after `first` has a pid in [first, last allocated] unless
 * the counter wrapped since. Returns that range, or null (read everything)
 * when `/proc/sys/kernel/ns_last_pid` cannot be read or shows a wrap. The
 * sweep after every shard then reads the environment of the few processes
 * started since the shard, not of every process on the machine (bench/README.md:
 * the full scan was the largest cost of a short shard).
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

/**
 * This process and its ancestors: never swept, even when they carry a
 * cookie (nested runs). Read once per process: ancestors can only go away,
 * never be added.
 */
function ancestry(): Set<number> {
  ancestors ??= readAncestry();
  return ancestors;
}
let ancestors: Set<number> | undefined;

/**
 * The process groups of this process and its ancestors (Linux; empty
 * elsewhere): a sweep never signals them as a group, whatever a process
 * in them carries.
 */
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

/** The CPU fields of /proc/<pid>/stat with state, parent and start time (child/proc-reader.ts parses them). */
export type ProcUsage = ProcStat;

/** {@link readProcStat}, named for the accounting's reads of a process's CPU ticks (exec/resource-usage.ts). */
export function readProcUsage(pid: number): ProcUsage | null {
  return procStat(FILES, pid);
}

/**
 * Resident set size now and its high-water mark (VmRSS, VmHWM of
 * /proc/<pid>/status), bytes; null when the process is gone or has no
 * memory (a zombie, a kernel thread).
 */
export function readProcMemory(pid: number): { rssBytes: number; hwmBytes: number } | null {
  const text = FILES.read(`/proc/${pid}/status`);
  return text === null ? null : parseProcMemory(text);
}

/** Child pids of every thread of `pid` (empty when it is gone), read as {@link listDescendants} reads them. */
export function childPids(pid: number): number[] {
  return childrenOf(FILES, pid);
}

/**
 * CPU time every thread of `pid` has run, ns (the first field of each
 * `/proc/<tid>/schedstat`), or null when unreadable (no schedstats, gone).
 */
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

/** A live process (not a zombie) with its group and command line; null when it is gone or a zombie. */
export function liveProcess(pid: number): Descendant | null {
  const stat = procStat(FILES, pid);
  if (stat === null || stat.state === "Z" || stat.state === "X") return null;
  const cmdline = FILES.read(`/proc/${pid}/cmdline`);
  return cmdline === null ? null : { pid, pgid: stat.pgid, command: commandLine(cmdline) };
}
