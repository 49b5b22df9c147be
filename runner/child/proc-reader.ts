/**
 * The one reader of Linux `/proc` for processes: the fields of
 * `/proc/<pid>/stat`, the child lists of a process's threads, and the walk
 * over a process's live descendants. The file system is the caller's
 * ({@link ProcFiles}): exec/proc-inspect.ts reads through node:fs in the
 * runner, the child preload (shard-preload.ts) through node:fs loaded only
 * when it lists its descendants. Imports nothing: the preload loads this
 * file, also from the run's copy of this folder (exec/coverage.ts).
 */

/** Reads `/proc` for {@link walkDescendants} and the parsers' callers; every failure is null. */
export interface ProcFiles {
  /** The names in a directory; null when it cannot be read. */
  list(dir: string): string[] | null;
  /** A file's text; null when it cannot be read (the process is gone). */
  read(file: string): string | null;
}

/** {@link ProcFiles} over node:fs's two synchronous calls (passed in: this file imports nothing). */
export function procFilesOf(fs: {
  readdirSync(dir: string): string[];
  readFileSync(file: string, encoding: "utf8"): string;
}): ProcFiles {
  return {
    list(dir) {
      try {
        return fs.readdirSync(dir);
      } catch {
        return null;
      }
    },
    read(file) {
      try {
        return fs.readFileSync(file, "utf8");
      } catch {
        return null;
      }
    },
  };
}

/** Fields of /proc/<pid>/stat that shardguard reads. */
export interface ProcStat {
  /** State letter: R, S, D, Z (zombie), X (dead), … */
  state: string;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Start time in clock ticks since boot (field 22), as written: tells a recycled pid apart. */
  start: string;
  /** User and system time of the process itself (fields 14, 15) and of its reaped children (cutime, cstime: 16, 17), clock ticks (USER_HZ, 100 a second on Linux). */
  utime: number;
  stime: number;
  cutime: number;
  cstime: number;
}

/**
 * The fields of a `/proc/<pid>/stat` text; null when it is not one. The
 * command name (field 2) is in parentheses and may hold spaces or
 * parentheses, so fields are counted from the last ")".
 */
export function parseProcStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  // Fields from 3 on: state (3), ppid (4), pgrp (5), …, starttime (22).
  const fields = text.slice(close + 2).split(" ");
  const state = fields[0];
  const start = fields[19];
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i])) as [
    number,
    number,
    number,
    number,
  ];
  if (
    state === undefined ||
    state === "" ||
    start === undefined ||
    ![ppid, pgid, utime, stime, cutime, cstime].every(Number.isInteger)
  )
    return null;
  return { state, ppid, pgid, start, utime, stime, cutime, cstime };
}

/**
 * Resident set size and its high-water mark, bytes, from a
 * `/proc/<pid>/status` text (`VmRSS`, `VmHWM`, in kB there); null when it
 * has none (a zombie, a kernel thread).
 */
export function parseProcMemory(text: string): { rssBytes: number; hwmBytes: number } | null {
  const kb = (name: string) => {
    const m = new RegExp(`^${name}:\\s*(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) * 1024 : null;
  };
  const rssBytes = kb("VmRSS");
  const hwmBytes = kb("VmHWM");
  return rssBytes === null ? null : { rssBytes, hwmBytes: hwmBytes ?? rssBytes };
}

/** Run time of one thread, ns: the first field of a `/proc/<tid>/schedstat` text (0 when unreadable). */
export function parseSchedstatNs(text: string): number {
  return Number(text.split(" ")[0]) || 0;
}

/** `/proc/<pid>/stat` of `pid` through `files`; null when there is no such process. */
export function procStat(files: ProcFiles, pid: number): ProcStat | null {
  const text = files.read(`/proc/${pid}/stat`);
  return text === null ? null : parseProcStat(text);
}

/** The pids of a `children` file: space-separated decimal numbers. */
export function parseChildren(text: string): number[] {
  const out: number[] = [];
  for (const word of text.split(" ")) if (/^\d+$/.test(word)) out.push(Number(word));
  return out;
}

/** A `/proc/<pid>/cmdline` text as one line: arguments joined by spaces, line breaks blanked, cut to 200 characters. */
export function commandLine(cmdline: string): string {
  return cmdline
    .split("\0")
    .join(" ")
    .replace(/[\r\n]/g, " ")
    .trim()
    .slice(0, 200);
}

/**
 * Child pids of every thread of `pid`; empty when it is gone. Each thread's
 * list is read through the thread's own directory, `/proc/<tid>/task/<tid>/children`,
 * never `/proc/<pid>/task/<tid>/children`: the same file, but lookups
 * through the process's task directory make the kernel's clean-up of /proc
 * slow when the process is reaped (docs/bun-behaviour.md, "The child preload").
 */
export function childrenOf(files: ProcFiles, pid: number): number[] {
  const out: number[] = [];
  for (const tid of files.list(`/proc/${pid}/task`) ?? []) {
    const text = files.read(`/proc/${tid}/task/${tid}/children`);
    if (text !== null) out.push(...parseChildren(text));
  }
  return out;
}

/**
 * A thread of `pid` that is neither a zombie nor dead, or null. A process
 * whose leader thread ended while another thread runs shows the leader's
 * state (Z) in `/proc/<pid>/stat`, yet is alive: a signal to its pid still
 * reaches every thread. Each thread's stat is read through its own
 * directory, `/proc/<tid>/stat` (see {@link childrenOf} for why).
 */
export function liveThread(files: ProcFiles, pid: number): number | null {
  for (const tid of files.list(`/proc/${pid}/task`) ?? []) {
    const id = Number(tid);
    if (id === pid || !Number.isInteger(id)) continue;
    const state = procStat(files, id)?.state;
    if (state !== undefined && state !== "Z" && state !== "X") return id;
  }
  return null;
}

/** A live descendant of a process, as {@link walkDescendants} finds it. */
export interface Descendant {
  pid: number;
  /** Its process group id. */
  pgid: number;
  /** Command line ({@link commandLine}). */
  command: string;
}

/**
 * The live descendants of `pid` (a zombie leader with a live thread counts
 * as live), breadth first, at most `max`: the children of every thread
 * ({@link childrenOf}), then theirs. Empty when `pid` is gone; a process
 * that vanishes during the walk is left out.
 */
export function walkDescendants(files: ProcFiles, pid: number, max: number): Descendant[] {
  const found: Descendant[] = [];
  const seen = new Set<number>([pid]);
  const queue = childrenOf(files, pid);
  while (queue.length > 0 && found.length < max) {
    const child = queue.shift()!;
    if (seen.has(child)) continue;
    seen.add(child);
    const stat = procStat(files, child);
    if (stat === null || stat.state === "X") continue;
    const source = stat.state === "Z" ? liveThread(files, child) : child;
    if (source === null) continue;
    const cmdline = files.read(`/proc/${source}/cmdline`);
    if (cmdline === null) continue;
    found.push({ pid: child, pgid: stat.pgid, command: commandLine(cmdline) });
    queue.push(...childrenOf(files, child));
  }
  return found;
}
