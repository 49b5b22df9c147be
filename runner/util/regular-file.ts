/**
 * Opening files a test can reach (its shard log, the marks file, Bun's
 * JUnit, a timings file, a report under OUT, bunfig.toml) without ever
 * blocking on them: a test may put a FIFO at any of those paths, and a
 * plain open(2) of a FIFO waits for a writer forever (issue 25). Every
 * open here is O_NONBLOCK, and the file must be a regular one, checked on
 * the descriptor (fstat), so the path cannot change between the check and
 * the read. O_NONBLOCK changes nothing for reads of a regular file.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";

/** The file at a path is not a regular file (a FIFO, a directory, a device): never waited on, never read. */
export class NotARegularFileError extends Error {
  override name = "NotARegularFileError";
  /** Like a file system error's `code`, for callers that switch on it. */
  readonly code = "ENOTREG";
}

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/**
 * A read-only descriptor of `file`, which must be a regular file; the
 * caller closes it.
 * @throws the file system error of the open (ENOENT, EACCES, …)
 * @throws NotARegularFileError when it is not a regular file
 */
export function openRegularSync(file: string): number {
  const fd = openSync(file, FLAGS);
  try {
    if (!fstatSync(fd).isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/**
 * {@link openRegularSync} as a promise of a FileHandle.
 * @throws as openRegularSync (as a rejection)
 */
export async function openRegular(file: string): Promise<FileHandle> {
  const handle = await open(file, FLAGS);
  try {
    if (!(await handle.stat()).isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/**
 * The whole content of the regular file `file`, like `readFileSync`, but it
 * never blocks on a FIFO and reads at most `maxBytes` (a file that a test
 * grew without bound is cut there, never read whole into memory).
 * @throws as openRegularSync
 */
export function readRegularFileSync(file: string, maxBytes = Number.MAX_SAFE_INTEGER): Buffer {
  const fd = openRegularSync(file);
  try {
    const size = fstatSync(fd).size;
    let buffer = Buffer.allocUnsafe(Math.min(maxBytes, size + 1));
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        // It grew since the stat (or a /proc file reports size 0): read on, up to the cap.
        if (length >= maxBytes) break;
        const bigger = Buffer.allocUnsafe(Math.min(maxBytes, Math.max(4096, buffer.length * 2)));
        buffer.copy(bigger, 0, 0, length);
        buffer = bigger;
      }
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

/** {@link readRegularFileSync} as UTF-8 text. */
export function readRegularTextSync(file: string, maxBytes?: number): string {
  return readRegularFileSync(file, maxBytes).toString("utf8");
}

/**
 * A write-only, append-mode descriptor of `file` (created with `mode` when
 * missing), which must be a regular file; the caller closes it. Opened
 * O_NONBLOCK first, so a FIFO put at the path (with or without a reader)
 * never blocks the open; on Linux the descriptor handed back is a fresh
 * open of the same file through `/proc/self/fd`, without O_NONBLOCK, so a
 * child that inherits it as its stdout sees an ordinary file descriptor.
 * @throws the file system error of the open (ENXIO for a FIFO without a reader, EACCES, …)
 * @throws NotARegularFileError when it is not a regular file
 */
export function openAppendRegularSync(file: string, mode: number): number {
  const fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, mode);
  try {
    if (!fstatSync(fd).isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  if (process.platform !== "linux") return fd;
  let plain: number;
  try {
    plain = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_APPEND);
  } catch {
    // No /proc: O_NONBLOCK changes nothing for a regular file's writes.
    return fd;
  }
  closeSync(fd);
  return plain;
}
