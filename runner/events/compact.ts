/**
 * Reads the three messages that come once or twice per test — found, start
 * and end — straight from their bytes when they are exactly in the compact
 * form Bun 1.4.4 writes, and hands their fields to a sink: no string, no
 * JSON.parse, no event object per message. Anything else (other spacing or
 * key order, an escape in a string, an error event) is left to the parser
 * of wire.ts (`parseInspectorMessage`), whose schema stays the authority:
 * what this reads is exactly what that parser gives for the same bytes
 * (test/events-compact.test.ts).
 *
 * Why it is kept, measured on Bun 1.4.4, 2 cores under load 11-15 (so wall
 * figures are rough, CPU ones less so), against the same channel with every
 * message through JSON.parse and the schema: bench/event-replay.ts (300,000
 * messages of 100,000 tests into the channel, model and journal, 3 rounds)
 * 238-345 ms of CPU and 534-737 ms wall with it, 645-855 ms and
 * 1,139-1,411 ms without; bench/perf.ts --cases p8 --rounds 3 (a real child
 * of 100,000 tests) runner CPU 1.21 s with it and 1.75 s without (main in the
 * same jobs: 1.14 s and 1.16 s), runner peak 178 and 207 MiB.
 */
import { CLOSE_BRACE, hasAt, integerAt, integerEnd, QUOTE } from "../util/bytes.ts";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { BUN_END_STATUSES, type BunEndStatus } from "./wire.ts";
import { keepOutOfFTL } from "../util/tuning.ts";

/** Receives the fields of compact messages (see {@link CompactReader}). */
export interface CompactSink {
  /**
   * A `TestReporter.found`: `url` and `name` as JSON.parse would give them
   * (equal urls in a row are the same string object), `line` 1-based.
   */
  found(
    id: number,
    url: string,
    line: number,
    name: string,
    type: "test" | "describe",
    parentId: number | undefined,
    message: Uint8Array,
  ): void;
  start(id: number, message: Uint8Array): void;
  /** `elapsedNs`: Bun's `elapsed`, nanoseconds, as sent (a wrapped 32-bit value: negative past 2^31 ns, wire.ts). */
  end(id: number, status: BunEndStatus, elapsedNs: number, message: Uint8Array): void;
}

const START_HEAD = Buffer.from('{"method":"TestReporter.start","params":{"id":');
const END_HEAD = Buffer.from('{"method":"TestReporter.end","params":{"id":');
const STATUS_KEY = Buffer.from(',"status":"');
const ELAPSED_KEY = Buffer.from('","elapsed":');
const MINUS = 0x2d;
const STATUS_BYTES = BUN_END_STATUSES.map((status) => [status, Buffer.from(status)] as const);
const FOUND_HEAD = Buffer.from('{"method":"TestReporter.found","params":{"id":');
const URL_KEY = Buffer.from(',"url":"');
const LINE_KEY = Buffer.from('","line":');
const NAME_KEY = Buffer.from(',"name":"');
const TYPE_KEY = Buffer.from('","type":"');
const TEST_TYPE = Buffer.from('test"');
const DESCRIBE_TYPE = Buffer.from('describe"');
const PARENT_KEY = Buffer.from(',"parentId":');
const BACKSLASH = 0x5c;

/**
 * The end (the closing quote) of a JSON string's content starting at `at`
 * that needs no decoding beyond UTF-8: no escape and no control character
 * (which JSON does not allow raw); -1 otherwise or when no quote follows.
 */
function plainStringEnd(bytes: Uint8Array, at: number): number {
  for (let i = at; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) return i;
    if (byte === BACKSLASH || byte < 0x20) return -1;
  }
  return -1;
}

/** True when `bytes` ends with the two closing braces at `at` (`at` -1: no integer was read). */
function closesAt(bytes: Uint8Array, at: number): boolean {
  return at >= 0 && at + 2 === bytes.length && bytes[at] === CLOSE_BRACE && bytes[at + 1] === CLOSE_BRACE;
}

/**
 * Reads compact found, start and end messages into a {@link CompactSink};
 * keeps the last url (bytes and string) so a file's tests share one string
 * and the url is decoded once per run of equal urls.
 */
export class CompactReader {
  private lastUrlBytes: Buffer = Buffer.alloc(0);
  private lastUrl = "";

  constructor(private readonly sink: CompactSink) {}

  /**
   * Hands `message` to the sink when it is a compact found, start or end
   * and returns true; returns false, having called nothing, for anything
   * else. Exceptions thrown by the sink propagate.
   */
  read(message: Buffer): boolean {
    return this.readStart(message) || this.readEnd(message) || this.readFound(message);
  }

  /** `{"method":"TestReporter.start","params":{"id":N}}`, nothing before, between or after. */
  private readStart(bytes: Buffer): boolean {
    if (!hasAt(bytes, 0, START_HEAD)) return false;
    const end = integerEnd(bytes, START_HEAD.length);
    if (!closesAt(bytes, end)) return false;
    this.sink.start(integerAt(bytes, START_HEAD.length, end), bytes);
    return true;
  }

  /**
   * `{"method":"TestReporter.end","params":{"id":N,"status":"pass","elapsed":N}}`,
   * nothing before, between or after; `elapsed` may be negative (Bun's
   * wrapped 32-bit value, wire.ts).
   */
  private readEnd(bytes: Buffer): boolean {
    if (!hasAt(bytes, 0, END_HEAD)) return false;
    const idEnd = integerEnd(bytes, END_HEAD.length);
    if (idEnd < 0 || !hasAt(bytes, idEnd, STATUS_KEY)) return false;
    const statusAt = idEnd + STATUS_KEY.length;
    let status: BunEndStatus | undefined;
    let statusEnd = 0;
    for (const [word, wordBytes] of STATUS_BYTES) {
      if (hasAt(bytes, statusAt, wordBytes) && bytes[statusAt + wordBytes.length] === QUOTE) {
        status = word;
        statusEnd = statusAt + wordBytes.length;
        break;
      }
    }
    if (status === undefined || !hasAt(bytes, statusEnd, ELAPSED_KEY)) return false;
    const negative = bytes[statusEnd + ELAPSED_KEY.length] === MINUS;
    const elapsedAt = statusEnd + ELAPSED_KEY.length + (negative ? 1 : 0);
    const end = integerEnd(bytes, elapsedAt);
    if (!closesAt(bytes, end)) return false;
    const magnitude = integerAt(bytes, elapsedAt, end);
    this.sink.end(integerAt(bytes, END_HEAD.length, idEnd), status, negative ? -magnitude : magnitude, bytes);
    return true;
  }

  /**
   * `{"method":"TestReporter.found","params":{"id":N,"url":"…","line":N,"name":"…","type":"test"|"describe"[,"parentId":N]}}`,
   * nothing before, between or after. A message over 64 KiB is left to the
   * parser, which cuts long strings (util/text-cap.ts).
   */
  private readFound(bytes: Buffer): boolean {
    if (bytes.length > MAX_TEXT_BYTES || !hasAt(bytes, 0, FOUND_HEAD)) return false;
    const idEnd = integerEnd(bytes, FOUND_HEAD.length);
    if (idEnd < 0 || !hasAt(bytes, idEnd, URL_KEY)) return false;
    const urlAt = idEnd + URL_KEY.length;
    const urlEnd = plainStringEnd(bytes, urlAt);
    if (urlEnd < 0 || !hasAt(bytes, urlEnd, LINE_KEY)) return false;
    const lineAt = urlEnd + LINE_KEY.length;
    const lineEnd = integerEnd(bytes, lineAt);
    if (lineEnd < 0 || !hasAt(bytes, lineEnd, NAME_KEY)) return false;
    const nameAt = lineEnd + NAME_KEY.length;
    const nameEnd = plainStringEnd(bytes, nameAt);
    if (nameEnd < 0 || !hasAt(bytes, nameEnd, TYPE_KEY)) return false;
    const typeAt = nameEnd + TYPE_KEY.length;
    const type = hasAt(bytes, typeAt, TEST_TYPE) ? "test" : hasAt(bytes, typeAt, DESCRIBE_TYPE) ? "describe" : null;
    if (type === null) return false;
    let at = typeAt + (type === "test" ? TEST_TYPE.length : DESCRIBE_TYPE.length);
    let parentId: number | undefined;
    if (hasAt(bytes, at, PARENT_KEY)) {
      const parentEnd = integerEnd(bytes, at + PARENT_KEY.length);
      if (parentEnd < 0) return false;
      parentId = integerAt(bytes, at + PARENT_KEY.length, parentEnd);
      at = parentEnd;
    }
    if (!closesAt(bytes, at)) return false;
    this.sink.found(
      integerAt(bytes, FOUND_HEAD.length, idEnd),
      this.url(bytes, urlAt, urlEnd),
      integerAt(bytes, lineAt, lineEnd),
      bytes.toString("utf8", nameAt, nameEnd),
      type,
      parentId,
      bytes,
    );
    return true;
  }

  /** The url in `bytes[from, to)`: the previous string when the bytes are the same. */
  private url(bytes: Buffer, from: number, to: number): string {
    const previous = this.lastUrlBytes;
    if (to - from === previous.length && bytes.compare(previous, 0, previous.length, from, to) === 0)
      return this.lastUrl;
    this.lastUrlBytes = Buffer.from(bytes.subarray(from, to));
    this.lastUrl = bytes.toString("utf8", from, to);
    return this.lastUrl;
  }
}

// Called once per event: FTL compiles cost more than short runs gain (util/tuning.ts).
keepOutOfFTL(
  CompactReader.prototype.read,
  // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
  CompactReader.prototype["readStart"],
  // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
  CompactReader.prototype["readEnd"],
  // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
  CompactReader.prototype["readFound"],
);
