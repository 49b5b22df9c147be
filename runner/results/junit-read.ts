/**
 * Reading Bun's JUnit file within its bounds: a file of up to
 * {@link WHOLE_READ_BYTES} in one synchronous read, a larger one streamed
 * through the cutter (results/junit-shrink.ts), whole or in pieces.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { NotARegularFileError } from "../util/regular-file.ts";
import { cutJUnitText, JUnitShrinker, MAX_JUNIT_BYTES } from "./junit-shrink.ts";

/**
 * Reads Bun's JUnit file at `file` through a {@link JUnitShrinker}.
 *
 * @param maxBytes the limit after the cuts (`junitByteLimit` (results/junit-shrink.ts) for a shard)
 * @throws the file system error (e.g. ENOENT, as `code`) when it cannot be read
 * @throws NotARegularFileError when it is not a regular file (a FIFO is never waited on)
 * @throws JUnitTooLargeError when it is too large even after the cuts
 */
export async function readJUnitCapped(file: string, maxBytes = MAX_JUNIT_BYTES): Promise<string> {
  // A file of up to WHOLE_READ_BYTES in one synchronous read, and one with
  // nothing to cut (nearly every one) skips the cutter (what it buys:
  // util/tuning.ts).
  const whole = readSmallRegularFile(file, Math.min(maxBytes, WHOLE_READ_BYTES));
  if (whole !== null) return cutJUnitText(whole, maxBytes);
  // Non-blocking and checked again: the file may have been replaced since.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
    // The output is at most the file (cuts only shrink it): sized once, not grown by doubling.
    const shrinker = new JUnitShrinker(MAX_TEXT_BYTES, maxBytes, stat.size);
    // One buffer, refilled: a fresh one per chunk was 10 MB of garbage per 100,000 testcases.
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
 * Reads Bun's JUnit file at `file` as {@link readJUnitCapped} does, but
 * hands the text to `consume` in pieces, in order: a file read whole comes
 * as one piece; a streamed one (over {@link WHOLE_READ_BYTES}) as pieces of
 * about READ_CHUNK_BYTES, each ending where character data may end
 * ({@link JUnitShrinker.take}), so neither its bytes nor its text are ever
 * held whole (for 100,000 names of 200 characters the two were 100 MB of
 * the runner's peak). A `consume` that throws stops the consuming, not the
 * read: a file past `maxBytes` is still reported as too large first.
 *
 * @param maxBytes the limit after the cuts (`junitByteLimit` (results/junit-shrink.ts) for a shard)
 * @throws the file system error (e.g. ENOENT, as `code`) when it cannot be read
 * @throws NotARegularFileError when it is not a regular file (a FIFO is never waited on)
 * @throws JUnitTooLargeError when it is too large even after the cuts
 * @throws what `consume` threw first, once the whole file was read within the bounds
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
    // Output taken after each chunk: it starts small and grows only to a chunk and a tag.
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

/**
 * The largest JUnit file read in one piece, bytes: 32 MiB. A larger one is
 * streamed through the cutter, so the runner never holds more than this
 * beside the cut text (a passing file of 100,000 tests is 10-19 MB).
 */
export const WHOLE_READ_BYTES = 32 * 1024 * 1024;

/**
 * The content of `file` when it is a regular file of at most `limit` bytes,
 * read synchronously; null when it is larger or grew while read (the
 * caller then streams it). Opened with O_NONBLOCK, so a FIFO put there
 * cannot block the runner.
 * @throws the file system error of the open (ENOENT: no file)
 * @throws NotARegularFileError when it is not a regular file
 */
function readSmallRegularFile(file: string, limit: number): Buffer | null {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    const size = stat.size;
    // Bun writes a regular file; anything else there (a FIFO a test left, a
    // directory) is no report, and a FIFO without a writer would block the
    // streamed read below for good.
    if (!stat.isFile()) throw new NotARegularFileError(`not a regular file: ${file}`);
    if (size > limit) return null;
    // One byte more than its size: a file that grew since is streamed instead.
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
