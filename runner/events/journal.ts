/**
 * The event journal: every inspector event of a shard, one JSON object per
 * line, in `<shard log name>.events.jsonl` next to the shard's log. It lets
 * a report be rebuilt (or a hang be diagnosed) from disk after the run, and
 * it is written as a stream so nothing accumulates in memory.
 *
 * Lines hold the validated events exactly as {@link testEventSchema} parses
 * them (unknown fields kept), so `readJournal` → `TestEventModel.fromEvents`
 * rebuilds the same per-test state, except clock values (replay time).
 */
import { closeSync, fchmodSync, writeSync } from "node:fs";
import { openAppendRegularSync, readRegularTextSync } from "../util/regular-file.ts";
import { testEventSchema, type TestEvent } from "./wire.ts";
import { NEWLINE } from "../util/bytes.ts";
import { isUnlinked, restoreUnlinked } from "../util/unlinked.ts";

/**
 * The journal path for a shard log: `x/shard-3.log` → `x/shard-3.events.jsonl`;
 * a name without `.log` gets `.events.jsonl` appended.
 */
export function journalPathFor(logPath: string): string {
  return logPath.endsWith(".log") ? `${logPath.slice(0, -".log".length)}.events.jsonl` : `${logPath}.events.jsonl`;
}

/**
 * An append-only writer. Opened with mode 0600 (re-applied with `fchmod` if
 * the file already existed). Lines are batched in memory and written with
 * synchronous `write(2)` calls on the file's descriptor: with a Node write
 * stream a shard's end waited 2–10 ms (traced under load) for the stream's
 * write and close on the thread pool, where a one-test shard's journal is
 * one write and one close (bench/README.md, "P1 round"). A write error does
 * not throw but is kept in
 * {@link EventJournal.error} and stops further writes, so a full disk never
 * takes the run down.
 */
export class EventJournal {
  private fd: number | null;
  private failure: Error | undefined;
  private ended = false;
  private lines = 0;
  /**
   * Lines not yet written, as UTF-8 in `pending[0, used)`;
   * flushed at the next event-loop turn or when the next line does not fit.
   */
  private pending = Buffer.allocUnsafe(JOURNAL_BATCH_BYTES);
  private used = 0;
  private flushQueued = false;

  private constructor(
    /** Absolute or relative path of the `.events.jsonl` file. */
    readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /**
   * Opens (creating or appending to) the journal at `path`.
   * @throws Error from `open(2)` (missing directory, permissions).
   */
  static open(path: string): EventJournal {
    // Never blocks on a FIFO a test put at the path (util/regular-file.ts).
    const fd = openAppendRegularSync(path, 0o600);
    try {
      fchmodSync(fd, 0o600);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    return new EventJournal(path, fd);
  }

  /**
   * Appends one event as one line: `message` when given (the message that
   * encodes `event` as it is, see inspector.ts `onEvent`; bytes are copied
   * at once), else the event re-encoded. No-op after {@link close} or a
   * write error. Lines are collected as bytes and written in
   * batches (at the next event-loop turn, or once 64 KiB are pending): one
   * write per event cost the runner about 25 µs each, and re-encoding
   * every event more than the rest of the journal (bench/README.md).
   */
  append(event: TestEvent, message?: string | Uint8Array): void {
    if (this.ended || this.failure) return;
    this.lines += 1;
    // A message's own text only when it is one line (Bun writes compact JSON).
    if (message instanceof Uint8Array && !message.includes(NEWLINE)) this.put(message);
    else this.putText(typeof message === "string" && !message.includes("\n") ? message : JSON.stringify(event));
    this.pending[this.used++] = NEWLINE;
    if (!this.flushQueued) {
      this.flushQueued = true;
      setTimeout(() => this.flush(), JOURNAL_FLUSH_MS);
    }
  }

  /**
   * Appends one line given as its bytes: a message the channel read as an
   * event in Bun's compact form (compact.ts), which holds no newline. The
   * bytes are copied at once. No-op after {@link close} or a write error.
   */
  appendLine(line: Uint8Array): void {
    if (this.ended || this.failure) return;
    this.lines += 1;
    this.put(line);
    this.pending[this.used++] = NEWLINE;
    if (!this.flushQueued) {
      this.flushQueued = true;
      setTimeout(() => this.flush(), JOURNAL_FLUSH_MS);
    }
  }

  /** Room for `bytes` more bytes and the newline, flushing first when needed. */
  private room(bytes: number): boolean {
    if (this.used + bytes + 1 <= this.pending.length) return true;
    this.flush();
    return bytes + 1 <= this.pending.length;
  }

  private put(bytes: Uint8Array): void {
    if (this.room(bytes.length)) {
      this.pending.set(bytes, this.used);
      this.used += bytes.length;
    } else this.write(bytes);
  }

  private putText(text: string): void {
    // At most 3 bytes of UTF-8 per UTF-16 unit: measure only a text that might not fit.
    const bytes = text.length * 3 + 1 <= this.pending.length - this.used ? text.length * 3 : Buffer.byteLength(text);
    if (this.room(bytes)) this.used += this.pending.write(text, this.used);
    else this.write(Buffer.from(text));
  }

  /** Writes the pending lines; the batch buffer is reused (written before it returns). */
  private flush(): void {
    this.flushQueued = false;
    if (this.used === 0) return;
    const used = this.used;
    this.used = 0;
    this.write(this.pending.subarray(0, used));
  }

  /**
   * Writes `bytes` whole (a regular file takes short writes only near a
   * full disk: the rest is retried until an error). The first error is
   * kept and nothing more is written.
   */
  private write(bytes: Uint8Array): void {
    if (this.fd === null || this.failure) return;
    try {
      for (let done = 0; done < bytes.length; ) done += writeSync(this.fd, bytes, done, bytes.length - done);
    } catch (error) {
      this.failure = error as Error;
    }
  }

  /** Number of lines taken (written, or lost to a write error). */
  get linesWritten(): number {
    return this.lines;
  }

  /** The first write error, if any; the journal is then incomplete. */
  get error(): Error | undefined {
    return this.failure;
  }

  /**
   * Writes the pending lines and closes the file, synchronously (the
   * promise is already settled; it never rejects). A close error is kept
   * like a write error. A journal deleted while open (a test removed the
   * output directory) is put back under its path first, where it can.
   */
  close(): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.flush();
    this.ended = true;
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) {
      try {
        if (isUnlinked(fd)) restoreUnlinked(fd, this.path);
      } catch {
        // Lost with its directory: the verdict read the events from memory.
      }
      try {
        closeSync(fd);
      } catch (error) {
        this.failure ??= error as Error;
      }
    }
    return Promise.resolve();
  }
}

/**
 * Most ms a journal line waits before it is written. Bun's
 * events arrive a few hundred bytes per socket read: flushing at every
 * event-loop turn meant one write(2) per read, 38,000 of them for a
 * 100,000-test file (bench/README.md, P8).
 */
const JOURNAL_FLUSH_MS = 20;

/** Bytes of pending journal lines written at once: 64 KiB. */
const JOURNAL_BATCH_BYTES = 64 * 1024;

/** The journal writer type, under the name the runner uses. */
export type Journal = EventJournal;

/**
 * Opens (creating or appending to) the journal at `path`, mode 0600.
 * Async for the caller's convenience; the open itself is synchronous.
 * @throws Error from `open(2)` (as a rejection).
 */
export async function openJournal(path: string): Promise<Journal> {
  return EventJournal.open(path);
}

/** What {@link readJournalDetailed} found besides the events. */
export interface JournalRead {
  events: TestEvent[];
  /** Complete lines that were not valid events (not JSON, or schema mismatch). */
  invalidLines: number;
  /** True when the file did not end with a newline and its last line was unusable (a write cut short). */
  truncatedTail: boolean;
}

/**
 * Reads a journal, skipping lines that do not parse or validate. A last
 * line cut short by a crash is tolerated (counted in `truncatedTail`).
 * @throws Error from reading the file (e.g. ENOENT).
 */
export async function readJournalDetailed(path: string): Promise<JournalRead> {
  const text = readRegularTextSync(path);
  const lines = text.split("\n");
  const last = lines.pop() ?? "";
  const result: JournalRead = { events: [], invalidLines: 0, truncatedTail: false };
  const parseLine = (line: string): TestEvent | undefined => {
    try {
      const parsed = testEventSchema().safeParse(JSON.parse(line));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  };
  for (const line of lines) {
    if (line.trim() === "") continue;
    const event = parseLine(line);
    if (event) result.events.push(event);
    else result.invalidLines += 1;
  }
  if (last.trim() !== "") {
    const event = parseLine(last);
    if (event) result.events.push(event);
    else result.truncatedTail = true;
  }
  return result;
}

/**
 * Reads the events of a journal in written order (see {@link readJournalDetailed}).
 * @throws Error from reading the file (e.g. ENOENT).
 */
export async function readJournal(path: string): Promise<TestEvent[]> {
  return (await readJournalDetailed(path)).events;
}
