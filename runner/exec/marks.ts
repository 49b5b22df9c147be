/**
 * Reader for the marks file the child preload writes
 * (runner/child/shard-preload.ts):
 *
 *     e                   when Bun reached the end of the run
 *     f<absolute path>\0  before the first test of each test file (Bun.main)
 *     l                   as each file of an `--isolate` batch begins to load
 *     s                   one per test start, only when the count file could not be mapped
 *     \nP <pid> <pgid> <command>   one line per descendant alive at that end
 *
 * and the start count next to it, `<marks file>.count`
 * ({@link startCountPath}): {@link COUNT_FILE_BYTES} bytes, two
 * little-endian u32, created as zeros by the runner before the spawn
 * ({@link prepareStartCount}) and mapped shared by the preload (`Bun.mmap`):
 * it increments the first per test start, which survives a SIGKILL of the
 * child, and waits at the end of the run until the runner stores
 * {@link END_ACK} in the second ({@link acknowledgeEndOfRun}). Tests
 * started = the first + the "s" bytes (the preload's fallback when mapping failed).
 *
 * The file lives where the test process can write (its path is in the
 * child's environment), so it is read as a stream with bounded memory
 * whatever its size: the marks are counted, at most {@link MAX_DESCENDANTS}
 * descendant lines of at most 300 characters are kept, and at most
 * {@link MAX_MARKS_BYTES} bytes are read, so that a test that grows the file
 * (a sparse 20 GiB file took 88 s to read) cannot hold the runner past its
 * wall-clock timeout.
 */
import { closeSync, constants, createReadStream, fstatSync, openSync, readSync, writeFileSync, writeSync } from "node:fs";
import { openRegularSync } from "../util/regular-file.ts";
import { NEWLINE, NUL } from "../util/bytes.ts";

/** Descendant lines kept, the preload's own limit. */
export const MAX_DESCENDANTS = 100;

/** A process the child preload saw alive when the run ended. */
export interface ListedDescendant {
  pid: number;
  /** Its process group id; null when the line did not say. */
  pgid: number | null;
  /** Command line, cut to 200 characters. */
  command: string;
}

/** What the marks file says. */
export interface ShardMarks {
  /** Tests started (retries count again): the mapped count plus the "s" marks, at most 2^32 - 1 + the "s" bytes read. */
  testsStarted: number;
  /** True when the "e" mark is present: Bun reached the normal end of the run. */
  finishedNormally: boolean;
  /** Descendants alive at the end of the run, in the preload's order. */
  descendants: ListedDescendant[];
  /**
   * Absolute paths of the files in which at least one test started, in
   * order (at most {@link MAX_FILES}); a path cut short by a kill counts.
   * A killed batched shard re-runs its other files (engine/run.ts).
   */
  filesStarted: string[];
  /**
   * Files of an `--isolate` batch that began to load (the preload's "l"
   * marks, one per file as Bun loads it, in the order given); 0 in any
   * other shard. The last of them was loading or running when the child ended.
   */
  filesLoaded: number;
}

/**
 * Bytes of the marks file read, at most: 256 MiB, one "s" per test start
 * (far beyond any real run's starts, whose JUnit limit stops growing at
 * about 245,000 starts anyway). Past it the rest is not read: the end mark
 * and descendant lines that follow read as missing, which can only make the
 * shard's verdict stricter (no normal end), never a pass.
 */
export const MAX_MARKS_BYTES = 256 * 1024 * 1024;

/** File records kept; a shard has at most --files-per-shard (≤ 10000) files. */
export const MAX_FILES = 10_000;
const F = 0x66;
/** Longest path kept, bytes (PATH_MAX). */
const MAX_PATH = 4096;

const S = 0x73;
const L = 0x6c;
const E = 0x65;
const MAX_LINE = 300;

/**
 * Reads a marks file. A missing or unreadable file reads as no marks at all
 * (no test started, no normal end, no descendants).
 */
export async function readMarks(file: string): Promise<ShardMarks> {
  const marks: ShardMarks = { testsStarted: 0, finishedNormally: false, descendants: [], filesStarted: [], filesLoaded: 0 };
  let inLines = false;
  let inPath = false;
  let path: Buffer[] = [];
  let pathBytes = 0;
  const endPath = () => {
    inPath = false;
    if (marks.filesStarted.length < MAX_FILES) marks.filesStarted.push(Buffer.concat(path).toString("utf8"));
    path = [];
    pathBytes = 0;
  };
  let line: Buffer[] = [];
  let lineBytes = 0;
  const endLine = () => {
    const text = Buffer.concat(line).toString("utf8");
    line = [];
    lineBytes = 0;
    const m = /^P (\d+) (\d+|\S*) ?(.*)$/.exec(text);
    if (!m || marks.descendants.length >= MAX_DESCENDANTS) return;
    const pgid = Number(m[2]);
    marks.descendants.push({ pid: Number(m[1]), pgid: m[2] !== "" && Number.isInteger(pgid) ? pgid : null, command: m[3]!.slice(0, 200) });
  };
  const scan = (chunk: Buffer) => {
    let from = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (inPath) {
        if (byte === NUL) endPath();
        else if (pathBytes < MAX_PATH) {
          path.push(chunk.subarray(i, i + 1));
          pathBytes += 1;
        }
      } else if (!inLines) {
        if (byte === F) inPath = true;
        else if (byte === S) marks.testsStarted += 1;
        else if (byte === L) marks.filesLoaded += 1;
        else if (byte === E) marks.finishedNormally = true;
        else if (byte === NEWLINE) {
          inLines = true;
          from = i + 1;
        }
      } else if (byte === NEWLINE) {
        if (lineBytes < MAX_LINE) line.push(chunk.subarray(from, Math.min(i, from + MAX_LINE - lineBytes)));
        endLine();
        from = i + 1;
      }
    }
    if (inLines && from < chunk.length && lineBytes < MAX_LINE) {
      const part = chunk.subarray(from, Math.min(chunk.length, from + MAX_LINE - lineBytes));
      line.push(Buffer.from(part));
      lineBytes += part.length;
    }
  };
  try {
    // The usual file (a few bytes per test) in one synchronous read: the
    // stream cost the runner ~0.1 ms of CPU per shard in thread-pool round
    // trips (bench/README.md). Anything larger is streamed; anything not a
    // regular file (a FIFO a test put there) is no marks at all.
    const small = readSmallFile(file);
    if (small) scan(small);
    else {
      // Through a descriptor checked to be a regular file: createReadStream's
      // own open(2) of a path would wait for good on a FIFO a test put there.
      const fd = openRegularSync(file);
      for await (const chunk of createReadStream("", { fd, highWaterMark: 64 * 1024, start: 0, end: MAX_MARKS_BYTES - 1 }) as AsyncIterable<Buffer>) scan(chunk);
    }
  } catch {
    // Missing (no test started) or unreadable: what was read so far stands.
  }
  if (lineBytes > 0) endLine();
  if (inPath) endPath();
  marks.testsStarted += readStartCount(startCountPath(file));
  return marks;
}

/** Suffix of the start-count file (the preload's START_COUNT_SUFFIX). */
export const START_COUNT_SUFFIX = ".count";

/** Path of the start-count file that goes with the marks file `marksFile`. */
export function startCountPath(marksFile: string): string {
  return marksFile + START_COUNT_SUFFIX;
}

/** Size of a start-count file: the count, then the end-of-run acknowledgement (the preload's COUNT_FILE_BYTES). */
export const COUNT_FILE_BYTES = 8;

/** The acknowledgement's value (the preload's END_ACK). */
export const END_ACK = 1;

/**
 * Creates (or empties) the start-count file of `marksFile`: {@link COUNT_FILE_BYTES}
 * zero bytes, which the child preload maps. Synchronous, like the unlinks before the
 * spawn (exec/shard.ts). Throws what writeFileSync throws; the caller may
 * ignore it, the preload then appends "s" marks instead.
 */
export function prepareStartCount(marksFile: string): void {
  writeFileSync(startCountPath(marksFile), new Uint8Array(COUNT_FILE_BYTES));
}

/**
 * Stores {@link END_ACK} in the second word of `marksFile`'s start-count
 * file: the preload, which polls its mapping of it, lets its child exit.
 * A file a test removed or replaced by something else is left alone (the
 * preload then stops waiting at its bound). Never throws.
 */
export function acknowledgeEndOfRun(marksFile: string): void {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put there must not block.
    fd = openSync(startCountPath(marksFile), constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    return;
  }
  try {
    const word = Buffer.alloc(4);
    word.writeUInt32LE(END_ACK, 0);
    if (fstatSync(fd).isFile()) writeSync(fd, word, 0, 4, 4);
  } catch {
    // The preload stops waiting at its bound.
  } finally {
    closeSync(fd);
  }
}

/**
 * The u32 (little-endian) in the first four bytes of a start-count file;
 * 0 when it is missing, not a regular file or shorter. Reads at most four
 * bytes whatever a test made of the file (O_NONBLOCK: a FIFO put there must
 * not block).
 */
function readStartCount(file: string): number {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return 0;
  }
  try {
    if (!fstatSync(fd).isFile()) return 0;
    const bytes = Buffer.alloc(4);
    return readSync(fd, bytes, 0, 4, 0) === 4 ? bytes.readUInt32LE(0) : 0;
  } catch {
    return 0;
  } finally {
    closeSync(fd);
  }
}

/** Files up to this size are read in one synchronous call, bytes. */
const SMALL_FILE_BYTES = 64 * 1024;

/**
 * The whole content of `file` when it is a regular file of at most
 * {@link SMALL_FILE_BYTES}; null when it is larger or not a regular file.
 * Throws what open and read throw (ENOENT: no marks).
 */
function readSmallFile(file: string): Buffer | null {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > SMALL_FILE_BYTES) return null;
    // One byte more than its size: a file that grew since is streamed instead.
    const buffer = Buffer.allocUnsafe(stat.size + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length === buffer.length) return null;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}
