/**
 * Tests' view of the event model (runner/events/test-model.ts): each test's
 * whole state, copied out of the model's records. The runner reads the
 * model only through its own outputs (`eventTests`, `running`,
 * `errorsOutsideTests`); tests also check what those outputs are made
 * from (describe paths, every error of every attempt, the clock readings),
 * so this reads the records the model keeps privately.
 */
import type { TestEventModel } from "../../runner/events/test-model.ts";
import {
  endedStatus,
  finalFailure,
  type EndedStatus,
  type EventError,
  type TestPhase,
  type TestRecord,
} from "../../runner/events/test-state.ts";
import type { BunEndStatus } from "../../runner/events/wire.ts";
import type { AttemptFailure, Failure } from "../../runner/results/report-model.ts";

/** One test as the model holds it, copied out: later events do not change it. */
export interface TestState {
  /** Bun's id for this test within the child (unique per child process). */
  readonly id: number;
  /** The test's own name. */
  readonly name: string;
  /** Names of the enclosing describe blocks, outermost first. */
  readonly describePath: readonly string[];
  /** `outer > inner > name`, the result model's `name`. */
  readonly fullName: string;
  /** Absolute file path as Bun sent it. */
  readonly url: string;
  /** File path relative to the model root, forward slashes. */
  readonly file: string;
  /**
   * 1-based line of the `test(...)` call in `file`, when Bun sent it;
   * undefined when the call is in a helper module (`url` is not `file`).
   */
  readonly line: number | undefined;
  /** True when `url` is not `file`: the test was defined through a helper module. */
  readonly viaHelper: boolean;
  readonly phase: TestPhase;
  /** Number of `start` events: 0 for skip/todo/never started, 2+ after retries. */
  readonly attempts: number;
  /** Set only in phase `ended`. */
  readonly status: EndedStatus | undefined;
  /** Bun's raw `end` status, set only in phase `ended`. */
  readonly bunStatus: BunEndStatus | undefined;
  /** Why the final attempt failed; set only when `status` is `failed`. */
  readonly failure: Failure | undefined;
  /**
   * The final attempt's time, ms: Bun's `end.elapsed` (ns) unwrapped by the
   * runner's receive times (elapsed.ts); set only in phase `ended`.
   */
  readonly durationMs: number | undefined;
  /** Clock value (ms) at the latest `start`; undefined when never started. */
  readonly startedAtMs: number | undefined;
  /** Clock value (ms) at `end`; undefined unless `ended`. */
  readonly endedAtMs: number | undefined;
  /** Every error attributed to this test, all attempts, in arrival order. */
  readonly errors: readonly EventError[];
  /**
   * One entry per attempt that was followed by another `start` of the same
   * test (Bun only retries a failed attempt), in order. Its message is the
   * attempt's errors, or a note that Bun reported none (a timed-out attempt
   * sends no error event).
   */
  readonly attemptFailures: readonly AttemptFailure[];
  /** True when `status` is passed and at least one earlier attempt failed. */
  readonly flaky: boolean;
}

/** The model's test records in found order (Bun's registration order, not source order). */
function records(model: TestEventModel): TestRecord[] {
  // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
  return [...model["tests_"].values()];
}

/**
 * The names of the describes above `record`, outermost first: up the `parentId` chain until an unknown id or a repeat.
 */
function describesAbove(model: TestEventModel, record: TestRecord): string[] {
  const names: string[] = [];
  const seen = new Set<number>();
  for (let id = record.parentId; id !== undefined && !seen.has(id); ) {
    seen.add(id);
    // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
    const parent = model["describes"].get(id);
    if (!parent) break;
    names.unshift(parent.name);
    id = parent.parentId;
  }
  return names;
}

/** A {@link TestState} copy of `record`, its file and line as the attribution mapped them. */
function stateOf(model: TestEventModel, record: TestRecord): TestState {
  const describePath = describesAbove(model, record);
  const ended = record.phase === "ended";
  const status = ended && record.bunStatus ? endedStatus(record.bunStatus) : undefined;
  const durationMs = ended && record.elapsedNs !== undefined ? record.elapsedNs / 1e6 : undefined;
  const attemptFailures = [...(record.failedAttempts ?? [])];
  return {
    id: record.id,
    name: record.name,
    describePath,
    // The model's own (its prefixes kept per describe), not rebuilt from describePath.
    // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
    fullName: model["fullName"](record),
    url: record.url,
    file: record.mapped ?? record.file,
    line: record.own ? record.line : undefined,
    viaHelper: !record.own,
    phase: record.phase,
    attempts: record.attempts,
    status,
    bunStatus: ended ? record.bunStatus : undefined,
    failure: status === "failed" ? finalFailure(record, durationMs) : undefined,
    durationMs,
    startedAtMs: record.startedAtMs,
    endedAtMs: ended ? record.endedAtMs : undefined,
    errors: (record.attemptErrors ?? []).flat(),
    attemptFailures,
    flaky: status === "passed" && attemptFailures.length > 0,
  };
}

/** Every test (describes excluded), in found order. */
export function testStates(model: TestEventModel): TestState[] {
  return records(model).map((record) => stateOf(model, record));
}

/** Every test in phase `running`, in found order. */
export function unfinishedTests(model: TestEventModel): TestState[] {
  return testStates(model).filter((test) => test.phase === "running");
}

/** Number of tests found in `file` (relative to the root, as the model maps it), or in all files. */
export function foundCount(model: TestEventModel, file?: string): number {
  const states = testStates(model);
  return file === undefined ? states.length : states.filter((test) => test.file === file).length;
}
