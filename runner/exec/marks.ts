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
 * ({@link startCountPath}): {@link COUNT_FILE_BYTES} bytes, three
 * little-endian u32, created as zeros by the runner before the spawn
 * ({@link prepareMarks}) and mapped shared by the preload (`Bun.mmap`): it
 * increments the first per test start, which survives a SIGKILL of the
 * child; the second is the runner's reply to the preload's plan barrier
 * (exec/start-acks.ts); the preload waits at the end of the run until the
 * runner stores {@link END_ACK} in the third ({@link acknowledgeEndOfRun}).
 * Tests started = the first + the "s" bytes (the preload's fallback when
 * mapping failed).
 *
 * The file lives where the test process can write (its path is in the
 * child's environment), so it is read as a stream with bounded memory
 * whatever its size: the marks are counted, at most {@link MAX_DESCENDANTS}
 * descendant lines of at most 300 characters are kept, and at most
 * {@link MAX_MARKS_BYTES} bytes are read, so that a test that grows the file
 * (a sparse 20 GiB file took 88 s to read) cannot hold the runner past its
 * wall-clock timeout.
 */
import {
  closeSync,
  constants,
  createReadStream,
  fstatSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { openRegularSync } from "../util/regular-file.ts";
import { NEWLINE, NUL } from "../util/bytes.ts";
import { isUnlinked } from "../util/unlinked.ts";

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
 *
 * With `held` (the runner's descriptors, {@link prepareMarks}) the files
 * the child wrote are read through them, so a marks file deleted under the
 * run still counts; whatever the paths name now, when that is another file
 * (made again after a deletion: an `--isolate` batch appends by path), is
 * read too, as it would be without them.
 */
export async function readMarks(file: string, held: HeldMarks | null = null): Promise<ShardMarks> {
  const marks: ShardMarks = {
    testsStarted: 0,
    finishedNormally: false,
    descendants: [],
    filesStarted: [],
    filesLoaded: 0,
  };
  const heldMarks = held?.marks ?? null;
  if (heldMarks !== null) await scanMarks(heldMarks, marks);
  if (heldMarks === null || namesAnother(file, heldMarks)) {
    let fd: number | null = null;
    try {
      fd = openRegularSync(file);
    } catch {
      // Missing (no test started) or not a regular file (a FIFO a test put there): no marks.
    }
    if (fd !== null) await scanMarks(fd, marks).finally(() => closeSync(fd));
  }
  const countFile = startCountPath(file);
  const heldCount = held?.count ?? null;
  if (heldCount !== null) marks.testsStarted += startCountAt(heldCount);
  if (heldCount === null || namesAnother(countFile, heldCount)) marks.testsStarted += readStartCount(countFile);
  return marks;
}

/**
 * True when `file` now names a file other than the one open at `fd` (it was
 * deleted and made again, or replaced); false when it names none.
 */
function namesAnother(file: string, fd: number): boolean {
  try {
    const [now, held] = [statSync(file), fstatSync(fd)];
    return now.ino !== held.ino || now.dev !== held.dev;
  } catch {
    return false;
  }
}

/** Adds the marks in the regular file open at `fd` (read from its start; the caller closes it) to `marks`. */
async function scanMarks(fd: number, marks: ShardMarks): Promise<void> {
  const scanner = marksScanner(marks);
  try {
    // The usual file (a few bytes per test) in one synchronous read: the
    // stream cost the runner ~0.1 ms of CPU per shard in thread-pool round
    // trips (bench/README.md). Anything larger is streamed.
    const small = readSmallFd(fd);
    if (small) scanner.scan(small);
    else {
      const options = { fd, autoClose: false, highWaterMark: 64 * 1024, start: 0, end: MAX_MARKS_BYTES - 1 };
      const stream = createReadStream("", options);
      for await (const chunk of stream as AsyncIterable<Buffer>) scanner.scan(chunk);
    }
  } catch {
    // Unreadable: what was read so far stands.
  }
  scanner.end();
}

/** The marks parser: bytes in, counts and records added to `marks`; `end` closes a record cut short. */
function marksScanner(marks: ShardMarks): { scan(chunk: Buffer): void; end(): void } {
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
    marks.descendants.push({
      pid: Number(m[1]),
      pgid: m[2] !== "" && Number.isInteger(pgid) ? pgid : null,
      command: m[3]!.slice(0, 200),
    });
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
  const end = () => {
    if (lineBytes > 0) endLine();
    if (inPath) endPath();
  };
  return { scan, end };
}

/** Suffix of the start-count file (the preload's START_COUNT_SUFFIX). */
export const START_COUNT_SUFFIX = ".count";

/** Path of the start-count file that goes with the marks file `marksFile`. */
export function startCountPath(marksFile: string): string {
  return marksFile + START_COUNT_SUFFIX;
}

/** Size of a start-count file in bytes: the start count, the plan-barrier reply (exec/start-acks.ts), the end-of-run acknowledgement (the preload's COUNT_FILE_BYTES). */
export const COUNT_FILE_BYTES = 12;

/** Byte offset of the end-of-run acknowledgement in the start-count file. */
export const END_ACK_OFFSET = 8;

/** The acknowledgement's value (the preload's END_ACK). */
export const END_ACK = 1;

/**
 * Creates (or empties) the start-count file of `marksFile`: {@link COUNT_FILE_BYTES} zero bytes,
 * which the child preload maps. Synchronous, like the unlinks before the
 * spawn (exec/shard.ts). Throws what writeFileSync throws; the caller may
 * ignore it, the preload then appends "s" marks instead.
 */
export function prepareStartCount(marksFile: string): void {
  writeFileSync(startCountPath(marksFile), new Uint8Array(COUNT_FILE_BYTES));
}

/**
 * The runner's descriptors of a shard's marks and start-count files, made
 * by {@link prepareMarks} before the spawn. The child preload opens both as
 * it loads (a file sink, a shared mapping), so what it writes stays readable
 * through these when a test deletes the files, or the whole output
 * directory, while the shard runs. Null where a file could not be made.
 */
export interface HeldMarks {
  marks: number | null;
  count: number | null;
}

/**
 * Makes the shard's marks file (empty) and start count (four zero bytes)
 * afresh and keeps a descriptor of each ({@link HeldMarks}); whatever was
 * at the paths (an earlier attempt's files, something a test put there) is
 * removed first. Never throws: without a count file the preload appends
 * "s" marks, without a held marks file {@link readMarks} reads the path.
 */
export function prepareMarks(marksFile: string): HeldMarks {
  const make = (file: string, bytes: Uint8Array | null): number | null => {
    try {
      rmSync(file, { force: true });
      const fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o600);
      if (bytes !== null) writeSync(fd, bytes, 0, bytes.length, 0);
      return fd;
    } catch {
      return null;
    }
  };
  return { marks: make(marksFile, null), count: make(startCountPath(marksFile), new Uint8Array(COUNT_FILE_BYTES)) };
}

/** True when the held marks file was deleted while the shard ran (a test removed the output directory). */
export function marksDeleted(held: HeldMarks): boolean {
  return held.marks !== null && isUnlinked(held.marks);
}

/** Closes the descriptors of {@link prepareMarks}, once. */
export function releaseMarks(held: HeldMarks): void {
  for (const fd of [held.marks, held.count]) if (fd !== null) closeSync(fd);
  held.marks = held.count = null;
}

/**
 * Stores {@link END_ACK} in the third word of `marksFile`'s start-count
 * file: the preload, which polls its mapping of it, lets its child exit.
 * Written through `held` (the runner's descriptor, {@link prepareMarks})
 * when there is one, so a deleted or replaced path cannot take the write;
 * else by path, where a file a test removed or replaced by something else
 * is left alone (the preload then stops waiting at its bound). Never throws.
 */
export function acknowledgeEndOfRun(marksFile: string, held: HeldMarks | null = null): void {
  const word = Buffer.alloc(4);
  word.writeUInt32LE(END_ACK, 0);
  if (held?.count != null) {
    try {
      writeSync(held.count, word, 0, 4, END_ACK_OFFSET);
      return;
    } catch {
      // Fall back to the path.
    }
  }
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put there must not block.
    fd = openSync(startCountPath(marksFile), constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    return;
  }
  try {
    if (fstatSync(fd).isFile()) writeSync(fd, word, 0, 4, END_ACK_OFFSET);
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
    return startCountAt(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * The count in the start-count file open at `fd` (its first four bytes); 0
 * when it is not a regular file, shorter, or unreadable.
 */
function startCountAt(fd: number): number {
  try {
    if (!fstatSync(fd).isFile()) return 0;
    const bytes = Buffer.alloc(4);
    return readSync(fd, bytes, 0, 4, 0) === 4 ? bytes.readUInt32LE(0) : 0;
  } catch {
    return 0;
  }
}

/** Files up to this size are read in one synchronous call, bytes. */
const SMALL_FILE_BYTES = 64 * 1024;

/**
 * The whole content of the file open at `fd` (read from its start) when it
 * is a regular file of at most {@link SMALL_FILE_BYTES}; null when it is
 * larger or not a regular file. Throws what read throws.
 */
function readSmallFd(fd: number): Buffer | null {
  const stat = fstatSync(fd);
  if (!stat.isFile() || stat.size > SMALL_FILE_BYTES) return null;
  // One byte more than its size: a file that grew since is streamed instead.
  const buffer = Buffer.allocUnsafe(stat.size + 1);
  let length = 0;
  for (;;) {
    const n = readSync(fd, buffer, length, buffer.length - length, length);
    if (n === 0) break;
    length += n;
    if (length === buffer.length) return null;
  }
  return buffer.subarray(0, length);
}
