/**
 * The event journal: a shard's inspector events, one JSON line each, in `<shard log>.events.jsonl`, streamed so a
 * report can be rebuilt from disk; `readJournal` → `TestEventModel.fromEvents` rebuilds the same state.
 */
import { closeSync, fchmodSync, writeSync } from "node:fs";
import { openAppendRegularSync, readRegularTextSync } from "../util/regular-file.ts";
import { testEventSchema, type TestEvent } from "./wire.ts";
import { NEWLINE } from "../util/bytes.ts";
import { isUnlinked, restoreUnlinked } from "../util/unlinked.ts";

/** `x/shard-3.log` → `x/shard-3.events.jsonl`; a name without `.log` gets `.events.jsonl` appended. */
export function journalPathFor(logPath: string): string {
  return logPath.endsWith(".log") ? `${logPath.slice(0, -".log".length)}.events.jsonl` : `${logPath}.events.jsonl`;
}

/**
 * An append-only writer, mode 0600. Lines are batched and written with synchronous `write(2)`: a Node stream made a
 * shard's end wait on the thread pool (bench/README.md, "P1 round"). A write error is kept in {@link error} and
 * stops writing, so a full disk never takes the run down.
 */
export class EventJournal {
  private fd: number | null;
  private failure: Error | undefined;
  private ended = false;
  private lines = 0;
  /** Lines not yet written, in `pending[0, used)`. */
  private pending = Buffer.allocUnsafe(JOURNAL_BATCH_BYTES);
  private used = 0;
  private flushQueued = false;

  private constructor(
    readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** Opens (creating or appending to) the journal at `path`. @throws Error from `open(2)` */
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
   * Appends one event as one line: `message` when given (copied at once), else the event re-encoded. Batched:
   * a write per event, and re-encoding each, cost more than the rest of the journal (bench/README.md).
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

  /** Appends a compact message's bytes (compact.ts, no newline) as one line, copied at once. */
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

  /** Writes `bytes` whole, retrying short writes; the first error is kept and ends writing. */
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
   * Writes the pending lines and closes, synchronously (the promise is settled, never rejects). A journal deleted
   * while open (a test removed the output directory) is put back under its path first, where it can.
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

/** Most ms a line waits: Bun's events arrive a few per read, a write per read was costly (bench/README.md, P8). */
const JOURNAL_FLUSH_MS = 20;

/** Bytes of pending lines written at once. */
const JOURNAL_BATCH_BYTES = 64 * 1024;

/** The journal writer type, under the name the runner uses. */
export type Journal = EventJournal;

/** Opens the journal at `path`, mode 0600; async for callers, the open is synchronous. @throws Error (rejection) */
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

/** Reads a journal, skipping invalid lines and tolerating a last line cut short. @throws Error from reading */
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

/** The journal's events in written order ({@link readJournalDetailed}). @throws Error from reading the file */
export async function readJournal(path: string): Promise<TestEvent[]> {
  return (await readJournalDetailed(path)).events;
}
