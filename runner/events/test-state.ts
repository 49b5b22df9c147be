/** The event model's per-test records (test-model.ts) and the rules that turn Bun's errors into failure text. */
import type { AttemptFailure, Failure, TestStatus } from "../results/report-model.ts";
import type { BunEndStatus } from "./wire.ts";
import type { AttributionEntry } from "./attribution.ts";

/**
 * Where a test is, from events so far: `found` (no start or end), `running` (latest attempt started, no end: in
 * flight, or interrupted, or its end was lost; never a pass), `ended` (Bun sent `end`: `status` has its verdict).
 */
export type TestPhase = "found" | "running" | "ended";

/** Bun's verdict as a result status (timeout → failed, failure type "timeout"). */
export type EndedStatus = Extract<TestStatus, "passed" | "failed" | "skipped" | "todo">;

/** One `LifecycleReporter.error`, as attributed by the model. */
export interface EventError {
  /** Bun's message text. */
  name: string;
  /** Stack locations, files relative to the model root. */
  message: string;
  /** Stack locations Bun sent, files relative to the model root, 1-based line/column. */
  locations: ErrorLocation[];
  /** 1-based attempt of the test it was attributed to; 0 for errors outside tests. */
  attempt: number;
  /** On the stand-in for errors left out of a long list ({@link pushError}): how many. */
  omitted?: number;
}

/** Errors kept at each end of one list, a counting stand-in between: a test may send errors without bound. */
export const KEPT_ERRORS_AT_EACH_END = 4;

/** Appends `error`, keeping the first and last `keep` and a stand-in counting the rest; returns 0 or 1 left out. */
export function pushError<T extends EventError>(list: T[], error: T, keep = KEPT_ERRORS_AT_EACH_END): number {
  if (list.length < 2 * keep) {
    list.push(error);
    return 0;
  }
  const gap = list[keep]!;
  if (gap.omitted === undefined) {
    list[keep] = { ...gap, name: "shardguard", locations: [], omitted: 1, message: gapMessage(1) };
  } else {
    list.splice(keep + 1, 1);
    gap.omitted += 1;
    gap.message = gapMessage(gap.omitted);
  }
  list.push(error);
  return 1;
}

const gapMessage = (n: number) =>
  `[shardguard: ${n} more ${n === 1 ? "error" : "errors"} left out here; full text in the shard log]`;

/** A source location of an error, 1-based; `line`/`column` absent when Bun sent none. */
export interface ErrorLocation {
  file: string;
  line?: number;
  column?: number;
}

/** An error that arrived while no test was running (load-time throw, hook error). */
export interface OutsideError extends EventError {
  /** Best guess of its test file: the first location in a file with found tests, else the first location. */
  file: string | undefined;
}

/** Options of {@link TestEventModel}. */
export interface ModelOptions {
  /** The run root, absolute: paths are made relative to it. */
  root: string;
  /** Monotonic ms clock read at each `start` and `end` (default `performance.now()`). */
  now?: () => number;
  /** The shard's planned files, relative to `root`: helper-defined tests are mapped to them (attribution.ts). */
  files?: readonly string[];
}

/** Internal to the model: one test, kept small (one per test for the run; lists made on first use). */
export interface TestRecord extends AttributionEntry {
  id: number;
  /** Position among found blocks: ties among running tests break by it. */
  foundSeq: number;
  name: string;
  url: string;
  /** `url` relative to the root; the planned file may differ (test-model.ts fileFor). */
  file: string;
  line: number | undefined;
  parentId: number | undefined;
  phase: TestPhase;
  bunStatus: BunEndStatus | undefined;
  elapsedNs: number | undefined;
  startedAtMs: number | undefined;
  endedAtMs: number | undefined;
  startSeq: number;
  attempts: number;
  /** Per attempt, its errors; undefined until the first. */
  attemptErrors: EventError[][] | undefined;
  /** Per attempt Bun retried, its failure; undefined until the first. */
  failedAttempts: AttemptFailure[] | undefined;
}

/** Internal to the model (test-model.ts). */
export interface DescribeRecord extends AttributionEntry {
  name: string;
  parentId: number | undefined;
  /** Position among found blocks (run-order.ts). */
  foundSeq: number;
  /** `outer > … > name > `, made when first needed (test-model.ts prefixOf). */
  prefix: string | undefined;
}

/** The errors of 1-based attempt `attempt`; empty when none arrived. */
export function attemptErrorsOf(record: TestRecord, attempt: number): readonly EventError[] {
  return record.attemptErrors?.[attempt - 1] ?? NO_ERRORS;
}

/** The errors of the current attempt, made on first use; undefined before any start. */
export function currentErrors(record: TestRecord): EventError[] | undefined {
  if (record.attempts === 0) return undefined;
  const lists = (record.attemptErrors ??= []);
  while (lists.length < record.attempts) lists.push([]);
  return lists[record.attempts - 1];
}

const NO_ERRORS: readonly EventError[] = Object.freeze([]);

const STATUS_OF: Record<BunEndStatus, EndedStatus> = {
  pass: "passed",
  fail: "failed",
  timeout: "failed",
  skip: "skipped",
  todo: "todo",
  // A test that `-t` / `--test-name-pattern` left out: Bun's JUnit counts it skipped too.
  skipped_because_label: "skipped",
};

/** Bun's `end` status as a result status. */
export const endedStatus = (status: BunEndStatus): EndedStatus => STATUS_OF[status];

/** The errors' messages, one paragraph each. */
export function joinMessages(errors: readonly EventError[]): string {
  return errors.map((error) => error.message.trimEnd()).join("\n\n");
}

/** The failure of retried attempt `number`, from its errors. */
export function attemptFailure(errors: readonly EventError[], number: number): AttemptFailure {
  const first = errors[0];
  if (!first) {
    return {
      type: "failure",
      message: `attempt ${number} failed; Bun reported no error for it (a per-test timeout sends none)`,
    };
  }
  return { type: "failure", errorName: first.name, message: joinMessages(errors) };
}

/** The errors' locations as `at file:line:column` lines. */
export function formatLocations(errors: readonly EventError[]): string {
  const lines: string[] = [];
  for (const error of errors) {
    for (const location of error.locations) {
      const position =
        location.line === undefined
          ? ""
          : `:${location.line}${location.column === undefined ? "" : `:${location.column}`}`;
      lines.push(`    at ${location.file}${position}`);
    }
  }
  return lines.join("\n");
}

/** The last error of the last attempt that has any. */
export function lastError(record: TestRecord): EventError | undefined {
  const lists = record.attemptErrors ?? [];
  for (let i = Math.min(record.attempts, lists.length) - 1; i >= 0; i--) {
    const errors = lists[i]!;
    if (errors.length > 0) return errors[errors.length - 1];
  }
  return undefined;
}

/** The failure of a test's final attempt: Bun's per-test timeout, or its errors with their locations. */
export function finalFailure(record: TestRecord, durationMs: number | undefined): Failure {
  const errors = attemptErrorsOf(record, record.attempts);
  const ran = durationMs === undefined ? "" : ` (ran ${Math.round(durationMs)} ms)`;
  if (record.bunStatus === "timeout") {
    const failure: Failure = { type: "timeout", message: `exceeded Bun's per-test timeout${ran}` };
    if (errors.length > 0) failure.details = joinMessages(errors);
    return failure;
  }
  const first = errors[0];
  if (!first) {
    return { type: "failure", message: `Bun reported the test as failed; no error message was received${ran}` };
  }
  const failure: Failure = { type: "failure", errorName: first.name, message: joinMessages(errors) };
  const where = formatLocations(errors);
  if (where) failure.details = `${failure.message}\n${where}`;
  return failure;
}

/** Undoes UTF-8 read as Latin-1 ("rÃ©" → "ré"); any other text comes back unchanged. */
export function repairLatin1(text: string): string {
  if (!/[\u0080-\u00ff]/.test(text) || /[^\u0000-\u00ff]/.test(text)) return text;
  const repaired = Buffer.from(text, "latin1").toString("utf8");
  return repaired.includes("\ufffd") ? text : repaired;
}
