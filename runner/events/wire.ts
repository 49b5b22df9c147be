/**
 * The inspector wire format: the zod schema of the four test events a
 * shard child's inspector pushes (TestReporter.found, start, end and
 * LifecycleReporter.error) and the parser of one raw message. The one
 * definition of an event: the client, the journal and the model import it
 * from here. Protocol: docs/bun-behaviour.md, "Inspector test events".
 */
import { z } from "zod";
import { capJsonStrings, MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { CLOSE_BRACE, hasAt, integerAt, integerEnd, QUOTE } from "../util/bytes.ts";
import { keepOutOfFTL } from "../util/tuning.ts";

/** Bun's final verdict on a test, as sent in `TestReporter.end`. */
export const BUN_END_STATUSES = ["pass", "fail", "timeout", "skip", "todo"] as const;
export type BunEndStatus = (typeof BUN_END_STATUSES)[number];

/**
 * The zod schemas of the four events, built on first use: found, start and
 * end are checked by hand ({@link parseInspectorMessage}), so a run without
 * an error event (no failing test) or a malformed one never builds them
 * (about 4 ms of CPU at start-up, bench/README.md).
 */
function buildSchemas() {
  const testId = z.number().int().nonnegative();

  /**
   * `TestReporter.found`: one test or describe block, sent for every block of a
   * file before any of its tests run. `url` is the absolute path of the file,
   * `line` 1-based, `parentId` the enclosing describe (absent at top level).
   * Unknown extra fields are kept (loose objects) so the journal stays raw.
   */
  const FoundEventSchema = z.object({
    method: z.literal("TestReporter.found"),
    params: z.looseObject({
      id: testId,
      url: z.string(),
      line: z.number().int().nonnegative().optional(),
      name: z.string(),
      type: z.enum(["test", "describe"]),
      parentId: testId.optional(),
    }),
  });

  /** `TestReporter.start`: one attempt of a test begins (sent again for each `--retry` attempt). */
  const StartEventSchema = z.object({
    method: z.literal("TestReporter.start"),
    params: z.looseObject({ id: testId }),
  });

  /**
   * `TestReporter.end`: the final attempt of a test finished. `elapsed` is in
   * **nanoseconds** and covers the final attempt only, as a signed 32-bit
   * value on Bun 1.4.4: it wraps past 2^31 ns (about 2.15 s), so a test of
   * 2.3 s sends a negative value and one of 5 s a small positive one. Any
   * number is taken; the model corrects it against the runner's own clock
   * (events/elapsed.ts), so a long test never loses its end. Skipped and todo tests
   * get an `end` (elapsed 0) without any `start`. A failed attempt that is
   * retried gets no `end`; the next `start` of the same id marks it.
   */
  const EndEventSchema = z.object({
    method: z.literal("TestReporter.end"),
    params: z.looseObject({
      id: testId,
      status: z.enum(BUN_END_STATUSES),
      elapsed: z.number(),
    }),
  });

  /**
   * `LifecycleReporter.error`: an error Bun printed, either a failing
   * assertion inside a running test or an "unhandled error between tests"
   * (e.g. a top-level `throw` in a test file). Carries no test id.
   * `urls[i]` pairs with `lineColumns[2i]` (line) and `lineColumns[2i+1]`
   * (column), both 1-based. A per-test timeout sends no error event.
   */
  const ErrorEventSchema = z.object({
    method: z.literal("LifecycleReporter.error"),
    params: z.looseObject({
      message: z.string(),
      name: z.string().optional(),
      urls: z.array(z.string()).optional(),
      lineColumns: z.array(z.number()).optional(),
      sourceLines: z.array(z.string()).optional(),
    }),
  });

  /** Any event shardguard consumes, discriminated by `method`. */
  const TestEventSchema = z.discriminatedUnion("method", [FoundEventSchema, StartEventSchema, EndEventSchema, ErrorEventSchema]);
  return { FoundEventSchema, StartEventSchema, EndEventSchema, ErrorEventSchema, TestEventSchema };
}

let schemas: ReturnType<typeof buildSchemas> | null = null;

/**
 * The schema of any event shardguard consumes, discriminated by `method`
 * (`TestReporter.found`, `.start`, `.end`, `LifecycleReporter.error`): the
 * authority for what an event is; unknown extra fields are kept.
 */
export function testEventSchema(): ReturnType<typeof buildSchemas>["TestEventSchema"] {
  return (schemas ??= buildSchemas()).TestEventSchema;
}

type Schemas = ReturnType<typeof buildSchemas>;
export type TestEvent = z.infer<Schemas["TestEventSchema"]>;
export type FoundEvent = z.infer<Schemas["FoundEventSchema"]>;
export type StartEvent = z.infer<Schemas["StartEventSchema"]>;
export type EndEvent = z.infer<Schemas["EndEventSchema"]>;
export type ErrorEvent = z.infer<Schemas["ErrorEventSchema"]>;

const EVENT_METHODS: ReadonlySet<string> = new Set([
  "TestReporter.found",
  "TestReporter.start",
  "TestReporter.end",
  "LifecycleReporter.error",
]);

/** What one inspector message turned out to be. */
export type ParsedMessage =
  | { kind: "event"; event: TestEvent }
  /**
   * A JSON-RPC reply to one of our requests; `error` when the child refused
   * it; `objectId` when it carries a remote object (`result.result.objectId`
   * of `Runtime.evaluate`).
   */
  | { kind: "response"; id: number; error?: string; objectId?: string }
  /** Valid JSON with a method we do not consume (e.g. `Console.*`). */
  | { kind: "ignored"; method: string }
  /** A known method whose params do not match the schema. */
  | { kind: "invalid"; method: string; issue: string }
  /** Not JSON, or JSON that is not an object. */
  | { kind: "malformed" };

const isId = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
const END_STATUSES: ReadonlySet<unknown> = new Set(BUN_END_STATUSES);

/**
 * The same rules as the found, start and end schemas ({@link testEventSchema}),
 * checked by hand: these three events come once to
 * three times per test, and zod's generic parse cost the runner more than
 * the rest of its event handling (bench/README.md: 100,000 tests). Anything this
 * does not accept goes through the schema, which stays the authority.
 */
function isCommonEvent(record: Record<string, unknown>): record is TestEvent {
  const p = record.params;
  if (typeof p !== "object" || p === null || Array.isArray(p)) return false;
  const params = p as Record<string, unknown>;
  if (!isId(params.id)) return false;
  switch (record.method) {
    case "TestReporter.start":
      return true;
    case "TestReporter.end":
      return END_STATUSES.has(params.status) && typeof params.elapsed === "number";
    case "TestReporter.found":
      return (
        typeof params.url === "string" &&
        typeof params.name === "string" &&
        (params.type === "test" || params.type === "describe") &&
        (params.line === undefined || isId(params.line)) &&
        (params.parentId === undefined || isId(params.parentId))
      );
    default:
      return false;
  }
}

/**
 * Classifies one raw inspector message. Pure; never throws.
 */
export function parseInspectorMessage(text: string): ParsedMessage {
  const parsed = classifyInspectorMessage(text);
  return parsed.kind === "raw-event" ? { kind: "event", event: parsed.event } : parsed;
}

/**
 * {@link parseInspectorMessage}, telling apart an event that is the
 * message's own JSON.parse result (`raw-event`: the hand-checked found,
 * start and end), so the message text encodes it as it is and the journal
 * can write that text instead of re-encoding the event. Pure; never throws.
 */
export function classifyInspectorMessage(text: string): ParsedMessage | { kind: "raw-event"; event: TestEvent } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "malformed" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { kind: "malformed" };
  const record = value as Record<string, unknown>;
  if (typeof record.method === "string") {
    if (!EVENT_METHODS.has(record.method)) return { kind: "ignored", method: record.method };
    if (isCommonEvent(record)) return { kind: "raw-event", event: record };
    const parsed = testEventSchema().safeParse(record);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      const where = first && first.path.length > 0 ? `${first.path.join(".")}: ` : "";
      return { kind: "invalid", method: record.method, issue: first ? where + first.message : "invalid" };
    }
    return { kind: "event", event: parsed.data };
  }
  if (typeof record.id === "number") {
    if (record.error !== undefined) {
      return { kind: "response", id: record.id, error: JSON.stringify(record.error) };
    }
    const result = record.result as { result?: { objectId?: unknown } } | undefined;
    const objectId = typeof result === "object" && result !== null ? result.result?.objectId : undefined;
    return typeof objectId === "string" ? { kind: "response", id: record.id, objectId } : { kind: "response", id: record.id };
  }
  return { kind: "malformed" };
}

const START_HEAD = Buffer.from('{"method":"TestReporter.start","params":{"id":');
const END_HEAD = Buffer.from('{"method":"TestReporter.end","params":{"id":');
const STATUS_KEY = Buffer.from(',"status":"');
const ELAPSED_KEY = Buffer.from('","elapsed":');
const MINUS = 0x2d;
const STATUS_BYTES = BUN_END_STATUSES.map((status) => [status, Buffer.from(status)] as const);

/**
 * The two messages that come once per test attempt, read from their bytes
 * when they are exactly as Bun 1.4.4 writes them:
 * `{"method":"TestReporter.start","params":{"id":N}}` and
 * `{"method":"TestReporter.end","params":{"id":N,"status":"pass","elapsed":N}}`
 * (no spaces, this key order, integers; `elapsed` may be negative, see
 * the end event's schema). The event returned is what
 * JSON.parse of those bytes gives, and it meets the schema; anything else
 * returns null and goes through {@link classifyInspectorMessage}, which
 * stays the authority. Skipping the string conversion and JSON.parse of
 * two thirds of the messages saved ~0.2 s of CPU per 100,000 tests
 * (bench/README.md, P8).
 */
export function parseStartOrEnd(bytes: Uint8Array): TestEvent | null {
  const startId = compactStartId(bytes);
  if (startId >= 0) return { method: "TestReporter.start", params: { id: startId } };
  const end: CompactEnd = { id: 0, status: "pass", elapsed: 0 };
  if (!readCompactEnd(bytes, end)) return null;
  return { method: "TestReporter.end", params: { id: end.id, status: end.status, elapsed: end.elapsed } };
}

/** The id of a start message in Bun's compact form ({@link parseStartOrEnd}), or -1. */
export function compactStartId(bytes: Uint8Array): number {
  if (!hasAt(bytes, 0, START_HEAD)) return -1;
  const end = integerEnd(bytes, START_HEAD.length);
  if (end < 0 || end + 2 !== bytes.length || bytes[end] !== CLOSE_BRACE || bytes[end + 1] !== CLOSE_BRACE) return -1;
  return integerAt(bytes, START_HEAD.length, end);
}

/** The fields of an end message: `elapsed` in ns, as Bun sent it (possibly wrapped, see the end event's schema). */
export interface CompactEnd {
  id: number;
  status: BunEndStatus;
  elapsed: number;
}

/**
 * Reads an end message in Bun's compact form ({@link parseStartOrEnd}) into
 * `out` (reused by the caller: no object per message); false, and `out`
 * unspecified, when `bytes` is anything else.
 */
export function readCompactEnd(bytes: Uint8Array, out: CompactEnd): boolean {
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
  // Bun's elapsed is a wrapped 32-bit value: a long test's is negative ("-1993799111").
  const negative = bytes[statusEnd + ELAPSED_KEY.length] === MINUS;
  const elapsedAt = statusEnd + ELAPSED_KEY.length + (negative ? 1 : 0);
  const end = integerEnd(bytes, elapsedAt);
  if (end < 0 || end + 2 !== bytes.length || bytes[end] !== CLOSE_BRACE || bytes[end + 1] !== CLOSE_BRACE) return false;
  const magnitude = integerAt(bytes, elapsedAt, end);
  out.id = integerAt(bytes, END_HEAD.length, idEnd);
  out.status = status;
  out.elapsed = negative ? -magnitude : magnitude;
  return true;
}

// One compact reader per event: FTL compiles of these cost more than short runs gain (util/tuning.ts).
keepOutOfFTL(readCompactEnd, compactStartId);
