/**
 * The inspector wire format: the zod schema of the four test events a
 * shard child's inspector pushes (TestReporter.found, start, end and
 * LifecycleReporter.error) and the parser of one raw message. The one
 * definition of an event: the client, the journal and the model import it
 * from here. Protocol: docs/bun-behaviour.md, "Inspector test events".
 */
import { z } from "zod";

/** Bun's final verdict on a test, as sent in `TestReporter.end`; `skipped_because_label` is a test that `-t` / `--test-name-pattern` left out (Bun 1.3.14 to 1.4.5). */
export const BUN_END_STATUSES = ["pass", "fail", "timeout", "skip", "todo", "skipped_because_label"] as const;
export type BunEndStatus = (typeof BUN_END_STATUSES)[number];

/**
 * The zod schemas of the four events, built on first use: Bun's compact
 * found, start and end messages are read from their bytes (compact.ts), so
 * a run without an error event (no failing test) or an unusual message
 * never builds them (about 4 ms of CPU at start-up, bench/README.md).
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
  const TestEventSchema = z.discriminatedUnion("method", [
    FoundEventSchema,
    StartEventSchema,
    EndEventSchema,
    ErrorEventSchema,
  ]);
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

/**
 * The parser of one inspector message that is not in Bun's compact form
 * (compact.ts reads those): JSON.parse, then the schema
 * ({@link testEventSchema}) decides what an event is. Pure; never throws.
 */
export function parseInspectorMessage(text: string): ParsedMessage {
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
    return typeof objectId === "string"
      ? { kind: "response", id: record.id, objectId }
      : { kind: "response", id: record.id };
  }
  return { kind: "malformed" };
}
