/**
 * The one reader of Linux `/proc` for processes, for the runner and the child preload. Imports
 * nothing: the preload loads it, also from the run's copy of this folder (exec/coverage.ts).
 */

/** Reads `/proc`: a directory's names, a file's text; null when unreadable (the process is gone). */
export interface ProcFiles {
  list(dir: string): string[] | null;
  read(file: string): string | null;
}

/** {@link ProcFiles} over node:fs's synchronous calls, passed in. */
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

/** Fields of /proc/<pid>/stat that shardguard reads; times in clock ticks (USER_HZ). */
export interface ProcStat {
  /** State letter: R, S, D, Z (zombie), X (dead), … */
  state: string;
  ppid: number;
  pgid: number;
  /** Start time as written: tells a recycled pid apart. */
  start: string;
  utime: number;
  stime: number;
  cutime: number;
  cstime: number;
}

/** The fields of a `/proc/<pid>/stat` text, counted from the last ")" (the command may hold any); null if none. */
export function parseProcStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
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

/** `VmRSS` and `VmHWM` of a `/proc/<pid>/status` text, bytes; null when it has none (a zombie). */
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
 * Child pids of every thread of `pid`; empty when it is gone. Read through `/proc/<tid>/task/<tid>`: lookups
 * under the process's task directory slow the kernel's reaping (docs/bun-behaviour.md, "The child preload").
 */
export function childrenOf(files: ProcFiles, pid: number): number[] {
  const out: number[] = [];
  for (const tid of files.list(`/proc/${pid}/task`) ?? []) {
    const text = files.read(`/proc/${tid}/task/${tid}/children`);
    if (text !== null) out.push(...parseChildren(text));
  }
  return out;
}

/** A live thread of `pid`, or null: a zombie leader with a running thread is alive (signals still reach it). */
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
  pgid: number;
  command: string;
}

/** The live descendants of `pid`, breadth first, at most `max`; one that vanishes meanwhile is left out. */
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
