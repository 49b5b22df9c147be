/**
 * Waits and reads for the preload's end of run that never give the event loop a turn: plain `bun test`
 * gives pending timers none there either. Bun's functions are taken at load (tests may break globals).
 */
const Glob = Bun.Glob;
const bunFile = Bun.file;
const peek = Bun.peek;
const peekStatus = Bun.peek.status;
const promiseThen = Promise.prototype.then;
const atomicsWait = Atomics.wait;
const sleepSync = Bun.sleepSync;
const pollWord = new Int32Array(new SharedArrayBuffer(4));

/** Microtask turns a file stream's reads may take before the file counts as unread. */
const READ_TURNS = 100;

/** Blocks the thread for `ms`; Atomics.wait, as Bun 1.4's sleepSync rounds waits below 1 ms to none. */
export function pause(ms: number): void {
  try {
    atomicsWait(pollWord, 0, 0, ms);
  } catch {
    sleepSync(Math.max(1, ms));
  }
}

/** Whether any thread of `pid` may have a child, without loading node:fs; false only when all lists read empty. */
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
 * Whether a small file holds a digit (a pid); null when unread within {@link READ_TURNS}. A file stream
 * settles in microtasks, `Bun.file().text()` on the event loop (docs/bun-behaviour.md, "The child preload").
 */
export async function holdsDigit(file: string): Promise<boolean | null> {
  const reader = bunFile(file).stream().getReader();
  let turns = 0;
  for (;;) {
    const next = reader.read();
    // A read left pending must not surface as an unhandled rejection.
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
