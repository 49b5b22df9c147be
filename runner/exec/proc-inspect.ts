/**
 * Looking at processes without touching them: liveness, /proc/<pid>/stat,
 * and the environment scan behind the cookie sweeps. Signals are sent by
 * exec/process.ts (and the guardian it starts); this module only reads.
 * The one /proc/<pid>/stat parser and the one liveness probe of the runner
 * (runner/lock.ts uses them too).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Fields of /proc/<pid>/stat that shardguard reads. */
export interface ProcStat {
  /** State letter: R, S, D, Z (zombie), X (dead), … */
  state: string;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Start time in clock ticks since boot (field 22), as written: tells a recycled pid apart. */
  start: string;
}

/**
 * Reads /proc/<pid>/stat (Linux). Null when there is no such process or no
 * /proc. The command name (field 2) is in parentheses and may hold spaces
 * or parentheses, so fields are counted from the last ")".
 */
export function readProcStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // Fields from 3 on: state (3), ppid (4), pgrp (5), …, starttime (22).
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const start = fields[19];
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  if (state === undefined || start === undefined || !Number.isInteger(ppid) || !Number.isInteger(pgid)) return null;
  return { state, ppid, pgid, start };
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

/** A live descendant of a process, as {@link listDescendants} finds it. */
export interface Descendant {
  pid: number;
  /** Its process group id. */
  pgid: number;
  /** Command line, spaces between arguments, cut to 200 characters. */
  command: string;
}

/**
 * The live, non-zombie descendants of `pid`, breadth first, at most `max`:
 * the children of every thread (`/proc/<pid>/task/<tid>/children`; a child
 * belongs to the thread that forked it), then theirs. Linux only; empty
 * elsewhere, or when `pid` is gone. Synchronous, so the tree cannot move
 * under a caller that holds the process still (exec/shard.ts calls it while
 * the shard child waits for the end-of-run acknowledgement): about 0.1 ms
 * for a child without descendants, where the child preload's own listing
 * cost the child about 1 ms of CPU (bench/README.md).
 */
export function listDescendants(pid: number, max: number): Descendant[] {
  if (process.platform !== "linux") return [];
  const found: Descendant[] = [];
  const seen = new Set<number>([pid]);
  const queue = childrenOf(pid);
  while (queue.length > 0 && found.length < max) {
    const child = queue.shift()!;
    if (seen.has(child)) continue;
    seen.add(child);
    const stat = readProcStat(child);
    if (stat === null || stat.state === "Z" || stat.state === "X") continue;
    let command = "";
    try {
      command = readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0").join(" ").replace(/[\r\n]/g, " ").trim().slice(0, 200);
    } catch {
      continue;
    }
    found.push({ pid: child, pgid: stat.pgid, command });
    queue.push(...childrenOf(child));
  }
  return found;
}

/**
 * Child pids of every thread of `pid`; empty when it is gone. Each thread's
 * list is read through the thread's own directory, `/proc/<tid>/task/<tid>/children`,
 * never `/proc/<pid>/task/<tid>/children`: the same file, but lookups through
 * the process's task directory make the kernel's clean-up of /proc slow when
 * the process is reaped (`d_walk` under `proc_invalidate_siblings_dcache` in
 * the parent's `wait4`). Bun's own `--no-orphans` does exactly that as a
 * shard child exits, which cost the runner ~1.5-3.5 ms of system time per
 * reaped child on a busy 2-core machine; read this way first, while the
 * child waits at the end of its run, the reap cost nothing measurable
 * (120 children: 228 ms of the parent's CPU against 43 ms, and against 43 ms
 * without `--no-orphans`; bench/README.md).
 */
function childrenOf(pid: number): number[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const tid of tids) {
    let text: string;
    try {
      text = readFileSync(`/proc/${tid}/task/${tid}/children`, "latin1");
    } catch {
      continue;
    }
    for (const word of text.split(" ")) if (/^\d+$/.test(word)) out.push(Number(word));
  }
  return out;
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
 * Lists live, non-zombie processes (excluding this one and its ancestors)
 * with an environment entry equal to, or starting with, `needle`. Linux
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
    const names = readdirSync("/proc");
    // Read after the listing, so every listed pid was allocated by then.
    const since = forkedSince === undefined ? null : pidsSince(forkedSince);
    const pids = names.filter((n) => /^\d+$/.test(n)).map(Number).filter((pid) => !since || (pid >= since.first && pid <= since.last));
    for (const pid of pids) {
      if (spared.has(pid)) continue;
      try {
        // environ first: most processes do not match, so stat and cmdline
        // are read only for the few that do (this scan runs after every shard).
        const raw = readFileSync(`/proc/${pid}/environ`, "utf8");
        if (!raw.includes(needle)) continue;
        const entries = raw.split("\0");
        const entry = entries.find(test);
        if (entry === undefined) continue;
        const stat = readProcStat(pid);
        if (stat === null || stat.state === "Z" || stat.state === "X") continue;
        const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim().slice(0, 200);
        hits.push({ pid, command, pgid: stat.pgid, entry, env: toEnvMap(entries) });
      } catch {
        // Exited while we looked, or not ours to read.
      }
    }
    return hits;
  }
  const ps = spawnSync("ps", ["eww", "-A", "-o", "pid=,pgid=,command="], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, timeout: 10_000 });
  for (const line of (ps.stdout ?? "").split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    if (spared.has(pid)) continue;
    const words = m[3]!.split(/\s+/);
    const entry = words.find(test);
    if (entry === undefined) continue;
    hits.push({ pid, command: m[3]!.slice(0, 200), pgid: Number(m[2]), entry, env: toEnvMap(words.filter((w) => w.includes("="))) });
  }
  return hits;
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
