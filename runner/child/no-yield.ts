/**
 * Waits and reads for the child preload's end of the run that never hand
 * the event loop a turn: plain `bun test` exits after its last test without
 * one, so a test's pending timers never fire there, and must not fire here
 * (shard-preload.ts). They run in microtasks or block the thread. Bun's
 * functions are taken at load: a test may break the globals. Imports nothing.
 */
const Glob = Bun.Glob;
const bunFile = Bun.file;
const peek = Bun.peek;
const peekStatus = Bun.peek.status;
const promiseThen = Promise.prototype.then;
const atomicsWait = Atomics.wait;
const sleepSync = Bun.sleepSync;
const pollWord = new Int32Array(new SharedArrayBuffer(4));

/** Microtask turns a file stream's reads may take before the file counts as unread (2 to 4 measured). */
const READ_TURNS = 100;

/** Blocks the thread for `ms` (Atomics.wait: Bun.sleepSync rounds a wait below 1 ms to none on 1.4). */
export function pause(ms: number): void {
  try {
    atomicsWait(pollWord, 0, 0, ms);
  } catch {
    sleepSync(Math.max(1, ms));
  }
}

/**
 * Whether any thread of process `pid` has a child, read through Bun's glob and
 * file APIs (about 0.5 ms, where node:fs costs 2 ms to load): false only when
 * every thread's `children` list was read and empty; any error says true, so
 * the full walk runs. Each list is read through the thread's own directory
 * (proc-reader.ts `childrenOf` says why).
 */
export async function mayHaveChildren(pid: number): Promise<boolean> {
  try {
    const tids = [...new Glob("*").scanSync({ cwd: `/proc/${pid}/task`, onlyFiles: false })];
    if (tids.length === 0) return true;
    for (const tid of tids) if ((await holdsDigit(`/proc/${tid}/task/${tid}/children`)) !== false) return true;
    return false;
  } catch {
    return true;
  }
}

/**
 * Whether a small file holds a decimal digit (a pid), read through Bun's file
 * stream: Bun reads a file on the stream's first pull, so its reads settle
 * within a few microtask turns (1.3.13 to 1.4.5, docs/bun-behaviour.md), where
 * `Bun.file().text()` settles on the event loop. Null when a read has not
 * settled within {@link READ_TURNS} turns: it is left, never awaited.
 */
export async function holdsDigit(file: string): Promise<boolean | null> {
  const reader = bunFile(file).stream().getReader();
  let turns = 0;
  for (;;) {
    const next = reader.read();
    // A read left pending or failed must not surface as an unhandled rejection.
    promiseThen.call(next, undefined, () => undefined);
    while (peekStatus(next) === "pending") {
      if (++turns > READ_TURNS) return null;
      await null;
    }
    if (peekStatus(next) !== "fulfilled") return null;
    const { done, value } = peek(next) as ReadableStreamReadResult<Uint8Array>;
    if (done) return false;
    for (const byte of value) if (byte >= 0x30 && byte <= 0x39) return true;
  }
}
