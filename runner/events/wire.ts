/**
 * The inspector wire format, the one definition of an event: the zod schema of the four test events and the parser
 * of one message (docs/bun-behaviour.md, "Inspector test events").
 */
import { z } from "zod";

/** Bun's verdicts in `TestReporter.end`; `skipped_because_label`: left out by `-t` (Bun 1.3.14 to 1.4.5). */
export const BUN_END_STATUSES = ["pass", "fail", "timeout", "skip", "todo", "skipped_because_label"] as const;
/** One of {@link BUN_END_STATUSES}. */
export type BunEndStatus = (typeof BUN_END_STATUSES)[number];

// Built on first use: compact messages never need them (bench/README.md).
function buildSchemas() {
  const testId = z.number().int().nonnegative();

  /** `TestReporter.found`: a test or describe, before the file's tests run; `url` absolute, `line` 1-based. */
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

  /** `TestReporter.start`: one attempt begins (again for each `--retry`). */
  const StartEventSchema = z.object({
    method: z.literal("TestReporter.start"),
    params: z.looseObject({ id: testId }),
  });

  /**
   * `TestReporter.end` of a final attempt; `elapsed`: ns, wrapping 32-bit (elapsed.ts corrects it). Skip and todo
   * send it without `start`; a retried attempt sends none.
   */
  const EndEventSchema = z.object({
    method: z.literal("TestReporter.end"),
    params: z.looseObject({
      id: testId,
      status: z.enum(BUN_END_STATUSES),
      elapsed: z.number(),
    }),
  });

  /** `LifecycleReporter.error`: no test id; `urls[i]` pairs with `lineColumns[2i, 2i+1]`, 1-based. */
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

  const TestEventSchema = z.discriminatedUnion("method", [
    FoundEventSchema,
    StartEventSchema,
    EndEventSchema,
    ErrorEventSchema,
  ]);
  return { FoundEventSchema, StartEventSchema, EndEventSchema, ErrorEventSchema, TestEventSchema };
}

let schemas: ReturnType<typeof buildSchemas> | null = null;

/** The schema of any event shardguard consumes, by `method`: the authority for what an event is (extra fields kept). */
export function testEventSchema(): ReturnType<typeof buildSchemas>["TestEventSchema"] {
  return (schemas ??= buildSchemas()).TestEventSchema;
}

type Schemas = ReturnType<typeof buildSchemas>;
/** The events as the schema parses them. */
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
  /** A reply to our request `id`: `error` when refused, `objectId` of a `Runtime.evaluate` result. */
  | { kind: "response"; id: number; error?: string; objectId?: string }
  /** Valid JSON with a method we do not consume (e.g. `Console.*`). */
  | { kind: "ignored"; method: string }
  /** A known method whose params do not match the schema. */
  | { kind: "invalid"; method: string; issue: string }
  /** Not JSON, or JSON that is not an object. */
  | { kind: "malformed" };

/** Parses one message not in compact form (compact.ts): JSON.parse, then the schema decides. Pure; never throws. */
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
