/** Reading Bun's JUnit within its bounds: small files in one read, larger ones streamed through junit-shrink.ts. */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { NotARegularFileError } from "../util/regular-file.ts";
import { cutJUnitText, JUnitShrinker, MAX_JUNIT_BYTES } from "./junit-shrink.ts";

/**
 * Reads Bun's JUnit file at `file` through a {@link JUnitShrinker}.
 * @param maxBytes the limit after the cuts (`junitByteLimit` for a shard)
 * @throws the file system error (e.g. ENOENT, as `code`) when it cannot be read
 * @throws NotARegularFileError when it is not a regular file (a FIFO is never waited on)
 * @throws JUnitTooLargeError when it is too large even after the cuts
 */
export async function readJUnitCapped(file: string, maxBytes = MAX_JUNIT_BYTES): Promise<string> {
  // Small files in one read, and nothing to cut skips the cutter (util/tuning.ts).
  const whole = readSmallRegularFile(file, Math.min(maxBytes, WHOLE_READ_BYTES));
  if (whole !== null) return cutJUnitText(whole, maxBytes);
  // Non-blocking and checked again: the file may have been replaced since.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
    // Cuts only shrink: the output is sized once by the file.
    const shrinker = new JUnitShrinker(MAX_TEXT_BYTES, maxBytes, stat.size);
    // One buffer, refilled: not garbage per chunk.
    const chunk = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      shrinker.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
    }
    return shrinker.end();
  } finally {
    await handle.close();
  }
}

/**
 * {@link readJUnitCapped}, handing the text to `consume` in pieces that end where character data may end, so
 * neither bytes nor text are held whole. A throwing `consume` stops consuming, not the read (too large wins).
 * @param maxBytes the limit after the cuts (`junitByteLimit` for a shard)
 * @throws as {@link readJUnitCapped}, then what `consume` threw first
 */
export async function readJUnitPieces(file: string, maxBytes: number, consume: (piece: string) => void): Promise<void> {
  const whole = readSmallRegularFile(file, Math.min(maxBytes, WHOLE_READ_BYTES));
  if (whole !== null) {
    consume(cutJUnitText(whole, maxBytes));
    return;
  }
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  let failure: { error: unknown } | null = null;
  const give = (piece: string) => {
    if (failure !== null || piece === "") return;
    try {
      consume(piece);
    } catch (error) {
      failure = { error };
    }
  };
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
    // Output taken after each chunk stays about a chunk and a tag.
    const shrinker = new JUnitShrinker(MAX_TEXT_BYTES, maxBytes);
    const chunk = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      shrinker.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
      give(shrinker.take());
    }
    give(shrinker.end());
  } finally {
    await handle.close();
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
}

/** Bytes read from Bun's JUnit file at a time when it is streamed. */
const READ_CHUNK_BYTES = 256 * 1024;

/** The largest JUnit file read in one piece, bytes; a larger one is streamed (bench/README.md). */
export const WHOLE_READ_BYTES = 32 * 1024 * 1024;

/**
 * `file`'s content when it is a regular file of at most `limit` bytes; null when larger or it grew (then
 * streamed). O_NONBLOCK, so a FIFO put there cannot block the runner.
 * @throws the file system error of the open (ENOENT: no file), or NotARegularFileError
 */
function readSmallRegularFile(file: string, limit: number): Buffer | null {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    const size = stat.size;
    // Bun writes a regular file; a FIFO without a writer would block the streamed read for good.
    if (!stat.isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
    if (size > limit) return null;
    // One byte more than its size: a file that grew is streamed instead.
    const buffer = Buffer.allocUnsafe(size + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) return buffer.subarray(0, length);
      length += n;
      if (length === buffer.length) return null;
    }
  } finally {
    closeSync(fd);
  }
}
