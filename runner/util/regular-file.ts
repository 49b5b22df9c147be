/**
 * Opens files a test can reach without blocking: a test may put a FIFO at any such path, and open(2)
 * of a FIFO waits for a writer forever. O_NONBLOCK, then a regular-file check on the descriptor.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";

/** The file at a path is not a regular file (a FIFO, a directory, a device): never waited on, never read. */
export class NotARegularFileError extends Error {
  override name = "NotARegularFileError";
  readonly code = "ENOTREG";
}

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** A read-only descriptor of the regular file `file`, for the caller to close; throws NotARegularFileError. */
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

/** {@link openRegularSync} as a promise of a FileHandle. */
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

/** Like `readFileSync` for a regular file, never blocking on a FIFO, at most `maxBytes`; throws as openRegularSync. */
export function readRegularFileSync(file: string, maxBytes = Number.MAX_SAFE_INTEGER): Buffer {
  const fd = openRegularSync(file);
  try {
    const size = fstatSync(fd).size;
    let buffer = Buffer.allocUnsafe(Math.min(maxBytes, size + 1));
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        // It grew since the stat, or a /proc file reports size 0.
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
 * An append descriptor of the regular file `file` (created with `mode`); throws as openRegularSync. On Linux
 * reopened via /proc without O_NONBLOCK, so a child inheriting it as stdout sees an ordinary descriptor.
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
    return fd;
  }
  closeSync(fd);
  return plain;
}
