/**
 * The per-test records of the event model (test-model.ts) and the rules that turn
 * the errors Bun sent during a test into its failure text.
 */
import type { AttemptFailure, Failure, TestStatus } from "../results/report-model.ts";
import type { BunEndStatus } from "./wire.ts";
import type { AttributionEntry } from "./attribution.ts";

/**
 * Where a test is in its life, from the events received so far:
 * - `found`: Bun registered it (`TestReporter.found`) and no `start` or
 *   `end` arrived. Either it has not run yet, or the child stopped (or its
 *   last events were lost) before it ran.
 * - `running`: its latest attempt sent `start` and no `end` followed. While
 *   the child lives, it is running now; after the child ended, it was
 *   interrupted — or it finished and its `end` was lost. Never a pass.
 * - `ended`: Bun sent `end`; `status` holds Bun's verdict.
 */
export type TestPhase = "found" | "running" | "ended";

/**
 * Bun's verdict mapped onto the result model's statuses:
 * pass→passed, fail→failed, timeout→failed (failure type "timeout"),
 * skip→skipped, todo→todo.
 */
export type EndedStatus = Extract<TestStatus, "passed" | "failed" | "skipped" | "todo">;

/** One `LifecycleReporter.error`, as attributed by the model. */
export interface EventError {
  /** Error class name from Bun (e.g. "Error"); "Error" when Bun sent none. */
  name: string;
  /** Bun's message text (may contain newlines and ANSI-free diff output). */
  message: string;
  /** Stack locations Bun sent, files relative to the model root, 1-based line/column. */
  locations: ErrorLocation[];
  /** 1-based attempt of the test it was attributed to; 0 for errors outside tests. */
  attempt: number;
  /**
   * Set on the stand-in for the errors left out of a long list
   * ({@link pushError}): how many; its message says so. Absent on Bun's errors.
   */
  omitted?: number;
}

/**
 * Errors kept at each end of one list (a test attempt's, or those outside
 * tests), 4: the first and the last four, and between them one stand-in
 * counting the rest. A test that rejected 16,000 promises with 60 KB
 * messages held them all (about 900 MB in the runner, bench/README.md)
 * though the report keeps 64 KiB of their text.
 */
export const KEPT_ERRORS_AT_EACH_END = 4;

/**
 * Appends `error` to `list`, keeping at most the first and the last
 * `keep` errors and, between them, one stand-in whose `omitted` counts the
 * errors left out. Returns the number left out by this call (0 or 1).
 */
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

/** A source location of an error; `line`/`column` are 1-based, absent when Bun sent none. */
export interface ErrorLocation {
  file: string;
  line?: number;
  column?: number;
}

/** An error that arrived while no test was running (load-time throw, hook error). */
export interface OutsideError extends EventError {
  /**
   * Best guess of the test file it belongs to: the first location whose file
   * has `found` tests, else the first location; undefined when Bun sent none.
   */
  file: string | undefined;
}

/** Options of {@link TestEventModel}. */
export interface ModelOptions {
  /** Absolute directory that file paths are made relative to (the run root). */
  root: string;
  /**
   * Monotonic clock in ms, read when a `start` or `end` is applied.
   * Default `performance.now()`. Tests inject a fake one.
   */
  now?: () => number;
  /**
   * The shard's planned files, relative to `root` as the plan names them.
   * When given, a test whose `found` url is not one of them (defined through
   * a helper module) is mapped to its planned file by the rules of
   * attribution.ts, and loses the helper's line. Undefined: every url is
   * taken as it is.
   */
  files?: readonly string[];
}

/**
 * Internal to the model (test-model.ts): one test. Kept small, since there is one
 * per test for the whole run: the attempt count is a number, and the lists
 * that only errors and retries need are allocated by the first of them.
 */
export interface TestRecord extends AttributionEntry {
  id: number;
  /** Position among the found blocks, tests and describes (0 for the first): ties among running tests break by it. */
  foundSeq: number;
  name: string;
  url: string;
  /** `url` relative to the root; the test's planned file may differ (test-model.ts fileFor). */
  file: string;
  line: number | undefined;
  parentId: number | undefined;
  phase: TestPhase;
  bunStatus: BunEndStatus | undefined;
  elapsedNs: number | undefined;
  startedAtMs: number | undefined;
  endedAtMs: number | undefined;
  startSeq: number;
  /** Number of `start` events (attempts). */
  attempts: number;
  /** `attemptErrors[k]`: the errors of attempt k + 1; undefined until the first error. */
  attemptErrors: EventError[][] | undefined;
  /** One entry per attempt that Bun retried; undefined until the first. */
  failedAttempts: AttemptFailure[] | undefined;
}

/** Internal to the model (test-model.ts). */
export interface DescribeRecord extends AttributionEntry {
  name: string;
  parentId: number | undefined;
  /** Position among the found blocks, tests and describes (run-order.ts). */
  foundSeq: number;
  /** `outer > … > name > `, set the first time a test's full name needs it (test-model.ts prefixOf). */
  prefix: string | undefined;
}

/** The errors of attempt `attempt` (1-based) of `record`; empty when none arrived. */
export function attemptErrorsOf(record: TestRecord, attempt: number): readonly EventError[] {
  return record.attemptErrors?.[attempt - 1] ?? NO_ERRORS;
}

/** The error list of `record`'s current attempt, made on first use; undefined before any start. */
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

export function joinMessages(errors: readonly EventError[]): string {
  return errors.map((error) => error.message.trimEnd()).join("\n\n");
}

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

/** The last error of a test's last attempt that has any, or undefined. */
export function lastError(record: TestRecord): EventError | undefined {
  const lists = record.attemptErrors ?? [];
  for (let i = Math.min(record.attempts, lists.length) - 1; i >= 0; i--) {
    const errors = lists[i]!;
    if (errors.length > 0) return errors[errors.length - 1];
  }
  return undefined;
}

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

/**
 * Undoes UTF-8 read as Latin-1 ("rÃ©" → "ré"); returns the text unchanged
 * when it is not such a string (any code point above U+00FF, or bytes that
 * are not valid UTF-8).
 */
export function repairLatin1(text: string): string {
  if (!/[\u0080-\u00ff]/.test(text) || /[^\u0000-\u00ff]/.test(text)) return text;
  const repaired = Buffer.from(text, "latin1").toString("utf8");
  return repaired.includes("\ufffd") ? text : repaired;
}
