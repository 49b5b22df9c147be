/**
 * Reader of the child preload's marks file: `e` (end of run), `f<path>\0` (a file's first test),
 * `l` (an `--isolate` file begins to load), `s` (a start, when the count could not be mapped),
 * `\nP <pid> <pgid> <command>` (a descendant alive at the end). Beside it `<marks>.count`: three
 * u32 (starts, which survive a SIGKILL; plan-barrier reply; end-of-run ack). Tests write where it
 * lives, so it is read streamed with bounds: a file a test grows cannot hold the runner past its timeout.
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
  pgid: number | null;
  command: string;
}

/** What the marks file says. */
export interface ShardMarks {
  /** Tests started, retries counting again: the mapped count plus the "s" marks. */
  testsStarted: number;
  /** The "e" mark is present: Bun reached the normal end of the run. */
  finishedNormally: boolean;
  descendants: ListedDescendant[];
  /** Files in which a test started, in order (at most {@link MAX_FILES}); a path cut short counts. */
  filesStarted: string[];
  /** Files of an `--isolate` batch that began to load; the last was loading or running at the end. */
  filesLoaded: number;
}

/** Marks bytes read at most; what is cut off reads as missing, which can only make a verdict stricter. */
export const MAX_MARKS_BYTES = 256 * 1024 * 1024;

/** File records kept: the most files a shard can have. */
export const MAX_FILES = 10_000;
const F = 0x66;
/** Longest path kept, bytes (PATH_MAX). */
const MAX_PATH = 4096;

const S = 0x73;
const L = 0x6c;
const E = 0x65;
const MAX_LINE = 300;

/**
 * Reads a marks file; missing or unreadable reads as no marks at all. With `held` ({@link prepareMarks})
 * the files are read through the runner's descriptors, so one deleted under the run still counts.
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
      // Missing, or a FIFO a test put there: no marks.
    }
    if (fd !== null) await scanMarks(fd, marks).finally(() => closeSync(fd));
  }
  const countFile = startCountPath(file);
  const heldCount = held?.count ?? null;
  if (heldCount !== null) marks.testsStarted += startCountAt(heldCount);
  if (heldCount === null || namesAnother(countFile, heldCount)) marks.testsStarted += readStartCount(countFile);
  return marks;
}

/** `file` now names a file other than the one open at `fd`; false when it names none. */
function namesAnother(file: string, fd: number): boolean {
  try {
    const [now, held] = [statSync(file), fstatSync(fd)];
    return now.ino !== held.ino || now.dev !== held.dev;
  } catch {
    return false;
  }
}

/** Adds the marks in the regular file open at `fd` to `marks`; the caller closes it. */
async function scanMarks(fd: number, marks: ShardMarks): Promise<void> {
  const scanner = marksScanner(marks);
  try {
    // The usual small file in one synchronous read: streaming costs thread-pool round trips
    // (bench/README.md, "Where the time goes").
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

/** Size of a start-count file in bytes (the preload's COUNT_FILE_BYTES). */
export const COUNT_FILE_BYTES = 12;

/** Byte offset of the end-of-run acknowledgement in the start-count file. */
export const END_ACK_OFFSET = 8;

/** The acknowledgement's value (the preload's END_ACK). */
export const END_ACK = 1;

/** Creates (or empties) the start-count file; throws what writeFileSync throws (the preload then appends "s"). */
export function prepareStartCount(marksFile: string): void {
  writeFileSync(startCountPath(marksFile), new Uint8Array(COUNT_FILE_BYTES));
}

/** The runner's descriptors of a shard's marks and count files: a test deleting them loses nothing. */
export interface HeldMarks {
  marks: number | null;
  count: number | null;
}

/** Makes the marks and count files afresh (removing what was there) and holds them open. Never throws. */
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

/** The held marks file was deleted while the shard ran (a test removed the output directory). */
export function marksDeleted(held: HeldMarks): boolean {
  return held.marks !== null && isUnlinked(held.marks);
}

/** Closes the descriptors of {@link prepareMarks}, once. */
export function releaseMarks(held: HeldMarks): void {
  for (const fd of [held.marks, held.count]) if (fd !== null) closeSync(fd);
  held.marks = held.count = null;
}

/**
 * Stores {@link END_ACK} in the count file so the waiting preload lets its child exit. Through `held`
 * when there is one, so a replaced path cannot take the write; never throws.
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

/** The first u32 of a start-count file; 0 when missing, not a regular file or shorter. */
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

/** The count in the start-count file open at `fd`; 0 when not a regular file, shorter, or unreadable. */
function startCountAt(fd: number): number {
  try {
    if (!fstatSync(fd).isFile()) return 0;
    const bytes = Buffer.alloc(4);
    return readSync(fd, bytes, 0, 4, 0) === 4 ? bytes.readUInt32LE(0) : 0;
  } catch {
    return 0;
  }
}

const SMALL_FILE_BYTES = 64 * 1024;

/** The regular file at `fd` when at most {@link SMALL_FILE_BYTES} bytes; else null. Throws what read throws. */
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
