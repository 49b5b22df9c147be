/**
 * `--lock NAME`: a machine-wide advisory lock (docs/configuration.md, "Lock (`--lock`)"). Not `proper-lockfile`:
 * it records no holder and judges death by a heartbeat's age, so a SIGKILLed holder blocks and a stalled one loses.
 *
 * Under `dir`, `<NAME>/<gen>.holder` (JSON, linked complete: `link` lets one contender win each generation) and
 * `<gen>.released`. The holder is the highest generation not released whose pid lives (with its /proc start time
 * on Linux, so a recycled pid is not it); a dead holder is superseded, never broken, and a contender that
 * re-created a deleted lower generation sees the higher one and backs off. Another pid namespace looks dead.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { chmod, link, lstat, mkdir, readdir, unlink, writeFile } from "node:fs/promises";
import { readRegularTextSync } from "../util/regular-file.ts";
import os from "node:os";
import path from "node:path";
import { isAlive, readProcStat } from "../exec/proc-inspect.ts";

/** Allowed lock names: 1–100 of letters, digits, `.`, `_`, `-`, not `.` or `..`. */
export const LOCK_NAME_PATTERN = /^[A-Za-z0-9._-]{1,100}$/;

/** How often a waiter looks at the lock again, ms. */
export const DEFAULT_POLL_MS = 200;

/** The default lock directory: `<os.tmpdir()>/shardguard-locks`. */
export function defaultLockDir(): string {
  return path.join(os.tmpdir(), "shardguard-locks");
}

/** The process that holds a lock, as a waiter sees it. */
export interface LockHolder {
  pid: number;
  /** When it acquired the lock. */
  since: Date;
}

/** Options of {@link acquireRunLock}. */
export interface AcquireLockOptions {
  /** Called once, the first time another live process is found holding the lock, with that holder. */
  onWait: (holder: LockHolder) => void;
  /** Lock directory; default {@link defaultLockDir}. Created with mode 0700. */
  dir?: string;
  /** Aborting stops the wait: the promise rejects with {@link LockAbortedError}. */
  signal?: AbortSignal;
  /** Poll interval while waiting, ms; default {@link DEFAULT_POLL_MS}. */
  pollMs?: number;
}

/** A held lock. */
export interface RunLock {
  readonly name: string;
  /** When this process acquired it. */
  readonly since: Date;
  /** Releases the lock; idempotent. A process that ends without it releases the lock by dying. */
  release(): Promise<void>;
}

/** Rejection of {@link acquireRunLock} when its signal aborts the wait. */
export class LockAbortedError extends Error {
  override readonly name = "LockAbortedError";
}

/** What a holder file holds. */
interface HolderRecord {
  pid: number;
  /** ISO time of acquisition. */
  since: string;
  /** Linux: start time of the process in clock ticks since boot (/proc/<pid>/stat field 22); null elsewhere. */
  procStart: string | null;
  /** Random per acquisition; tells this process's own holds apart from a dead process with a recycled pid. */
  token: string;
}

/** Tokens of the locks this process holds right now. */
const heldTokens = new Set<string>();
/** `dir\0name` keys of the locks this process holds right now. */
const heldNames = new Set<string>();

/**
 * Checks a lock name (it becomes a directory name): see {@link LOCK_NAME_PATTERN}.
 * @throws Error with a one-line message naming the problem
 */
export function validateLockName(name: string): void {
  if (!LOCK_NAME_PATTERN.test(name) || name === "." || name === "..") {
    throw new Error(
      `invalid lock name ${JSON.stringify(name)}: use 1-100 letters, digits, ".", "_" or "-" (not "." or "..")`,
    );
  }
}

/** The line a waiting run prints: `waiting for lock NAME held by pid P since T` (T in ISO-8601 UTC). */
export function lockWaitMessage(name: string, holder: LockHolder): string {
  return `waiting for lock ${name} held by pid ${holder.pid} since ${holder.since.toISOString()}`;
}

/**
 * Takes the machine-wide lock `name`, waiting while another live process holds it.
 *
 * @throws Error (one line) for an invalid name, a lock this process holds, or a lock directory that is not the
 *   user's own private directory; {@link LockAbortedError} when `signal` aborts; file system errors as they come
 */
export async function acquireRunLock(name: string, options: AcquireLockOptions): Promise<RunLock> {
  validateLockName(name);
  const dir = path.resolve(options.dir ?? defaultLockDir());
  const key = `${dir}\0${name}`;
  if (heldNames.has(key)) throw new Error(`lock ${name} is already held by this process`);
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const { signal } = options;
  const aborted = () => new LockAbortedError(`stopped waiting for lock ${name}`, { cause: signal?.reason });

  await ensurePrivateDir(dir);
  const lane = path.join(dir, name);
  await ensurePrivateDir(lane);

  let announced = false;
  for (;;) {
    if (signal?.aborted) throw aborted();
    const top = maxOf(await generations(lane));
    if (top >= 0) {
      const holder = await liveHolder(lane, top);
      if (holder === "vanished") continue;
      if (holder !== null) {
        if (!announced) {
          announced = true;
          options.onWait({ pid: holder.pid, since: new Date(holder.since) });
        }
        // Wakes early on abort; the loop head then throws.
        await delay(pollMs, undefined, signal ? { signal } : {}).catch(() => {});
        continue;
      }
    }
    const gen = top + 1;
    const since = new Date();
    const token = randomBytes(8).toString("hex");
    const record: HolderRecord = {
      pid: process.pid,
      since: since.toISOString(),
      procStart: procStartOf(process.pid),
      token,
    };
    if (!(await linkHolder(lane, gen, record))) continue;
    // A contender that re-created a deleted lower generation backs off here.
    if (maxOf(await generations(lane)) > gen) {
      await unlinkQuietly(holderPath(lane, gen));
      continue;
    }
    heldTokens.add(token);
    heldNames.add(key);
    await cleanUp(lane, gen);
    let released = false;
    const lock: RunLock = {
      name,
      since,
      async release() {
        if (released) return;
        released = true;
        heldTokens.delete(token);
        heldNames.delete(key);
        await writeFile(path.join(lane, `${gen}.released`), `${token}\n`, { mode: 0o600 });
      },
    };
    if (signal?.aborted) {
      await lock.release();
      throw aborted();
    }
    return lock;
  }
}

/**
 * The live holder of lock `name` now, null when free; reads only (`--no-wait` asks this first).
 * @throws Error when the name is invalid
 */
export async function lockHolderNow(name: string, dir: string = defaultLockDir()): Promise<LockHolder | null> {
  validateLockName(name);
  const lane = path.join(path.resolve(dir), name);
  for (let attempt = 0; attempt < 5; attempt++) {
    let gens: number[];
    try {
      gens = await generations(lane);
    } catch {
      return null;
    }
    const top = maxOf(gens);
    if (top < 0) return null;
    const holder = await liveHolder(lane, top);
    if (holder === "vanished") continue;
    return holder === null ? null : { pid: holder.pid, since: new Date(holder.since) };
  }
  return null;
}

/** Creates `dir` (mode 0700) or checks that the existing one is a real directory of ours; tightens its mode. */
async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await lstat(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) {
    throw new Error(
      `lock directory ${dir} is not a private directory of this user ` +
        `(${st.isDirectory() ? `owned by uid ${st.uid}` : "not a directory"}); choose another lock directory`,
    );
  }
  if ((st.mode & 0o777) !== 0o700) await chmod(dir, 0o700);
}

const holderPath = (lane: string, gen: number) => path.join(lane, `${gen}.holder`);

/** Generations that have a holder file. */
async function generations(lane: string): Promise<number[]> {
  const gens: number[] = [];
  for (const entry of await readdir(lane)) {
    const m = /^(\d+)\.holder$/.exec(entry);
    if (m) gens.push(Number(m[1]));
  }
  return gens;
}

const maxOf = (values: number[]) => values.reduce((a, b) => Math.max(a, b), -1);

/** The live holder of `gen`; null when free (released, dead, unreadable), "vanished" when deleted meanwhile. */
async function liveHolder(lane: string, gen: number): Promise<HolderRecord | null | "vanished"> {
  let text: string;
  try {
    text = readRegularTextSync(holderPath(lane, gen));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "vanished";
    // Not a regular file (a FIFO): never ours, and never waited on.
    if ((error as NodeJS.ErrnoException).code === "ENOTREG") return null;
    throw error;
  }
  const record = parseRecord(text);
  // Holder files are linked complete, so an unparsable one was not written by us: ignore it.
  if (record === null) return null;
  try {
    await lstat(path.join(lane, `${gen}.released`));
    return null;
  } catch {
    // Not released.
  }
  return isHolderAlive(record) ? record : null;
}

function parseRecord(text: string): HolderRecord | null {
  try {
    const value = JSON.parse(text) as Partial<HolderRecord>;
    if (typeof value.pid !== "number" || !Number.isInteger(value.pid) || value.pid <= 0) return null;
    if (typeof value.since !== "string" || Number.isNaN(Date.parse(value.since))) return null;
    if (typeof value.token !== "string") return null;
    return {
      pid: value.pid,
      since: value.since,
      token: value.token,
      procStart: typeof value.procStart === "string" ? value.procStart : null,
    };
  } catch {
    return null;
  }
}

/** True when the process that wrote `record` is still running. */
function isHolderAlive(record: HolderRecord): boolean {
  // Our own pid: alive only if the hold is one of ours, else a dead process had our pid.
  if (record.pid === process.pid) return heldTokens.has(record.token);
  // EPERM (a process of another user) counts as alive.
  if (!isAlive(record.pid)) return false;
  const stat = readProcStat(record.pid);
  if (stat === null) return true;
  if (stat.state === "Z" || stat.state === "X") return false;
  return record.procStart === null || record.procStart === stat.start;
}

function procStartOf(pid: number): string | null {
  return readProcStat(pid)?.start ?? null;
}

/** Writes `record` to a temporary file and hard-links it to `<gen>.holder`; false when that generation exists. */
async function linkHolder(lane: string, gen: number, record: HolderRecord): Promise<boolean> {
  const tmp = path.join(lane, `.tmp-${process.pid}-${record.token}`);
  await writeFile(tmp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  try {
    await link(tmp, holderPath(lane, gen));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlinkQuietly(tmp);
  }
}

/** Deletes generations below `gen` and temporary files of dead processes. Best effort. */
async function cleanUp(lane: string, gen: number): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(lane);
  } catch {
    return;
  }
  for (const entry of entries) {
    const old = /^(\d+)\.(holder|released)$/.exec(entry);
    const tmp = /^\.tmp-(\d+)-/.exec(entry);
    const stale =
      (old !== null && Number(old[1]) < gen) ||
      (tmp !== null && Number(tmp[1]) !== process.pid && !isAlive(Number(tmp[1])));
    if (stale) await unlinkQuietly(path.join(lane, entry));
  }
}

async function unlinkQuietly(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch {
    // Already gone.
  }
}
