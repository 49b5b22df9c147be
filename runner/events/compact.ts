/**
 * Reads Bun's compact found, start and end messages straight from their bytes into a sink: no string, JSON.parse or
 * event object per message. Anything else goes to wire.ts `parseInspectorMessage`, whose schema stays the
 * authority; both read the same bytes alike (test/events-compact.test.ts). Why: bench/README.md, "Where the time goes".
 */
import { CLOSE_BRACE, hasAt, integerAt, integerEnd, QUOTE } from "../util/bytes.ts";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { BUN_END_STATUSES, type BunEndStatus } from "./wire.ts";
import { keepOutOfFTL } from "../util/tuning.ts";

/** Receives the fields of compact messages (see {@link CompactReader}). */
export interface CompactSink {
  /** `url` and `name` as JSON.parse gives them (equal urls in a row: one string object), `line` 1-based. */
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
  /** `elapsedNs`: Bun's `elapsed` as sent, possibly wrapped (wire.ts). */
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

/** End (the closing quote) of a JSON string at `at` that needs no decoding (no escape or control byte), else -1. */
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

/** Reads compact messages into a {@link CompactSink}; keeps the last url so a file's tests share one string. */
export class CompactReader {
  private lastUrlBytes: Buffer = Buffer.alloc(0);
  private lastUrl = "";

  constructor(private readonly sink: CompactSink) {}

  /** Hands a compact found, start or end to the sink and returns true; else false, having called nothing. */
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

  /** `{"method":"TestReporter.end","params":{"id":N,"status":"…","elapsed":N}}`; `elapsed` may be negative. */
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
   * `{"method":"TestReporter.found","params":{"id":N,"url":"…","line":N,"name":"…","type":"…"[,"parentId":N]}}`;
   * over MAX_TEXT_BYTES it is left to the parser, which cuts long strings.
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
