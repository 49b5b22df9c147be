/**
 * The result model's constants and its summary, without the zod schemas
 * (results/report-model.ts, which re-exports all of this): what a run needs before
 * its first report, so that building the report schema (~6 ms at load,
 * bench/README.md) waits for the first report write, which comes after the
 * first shards run.
 */
/** Version of the JSON report layout; bump on any breaking change. */
export const REPORT_SCHEMA_VERSION = 2;

/**
 * Final state of one shard (one `bun test` child process).
 *
 * - `passed`: exited 0 on its own and Bun's JUnit lists every planned file.
 * - `failed`: Bun itself reported failures (exit 1 with per-test data, a load
 *   error, or a file without tests).
 * - `timed-out`: killed by shardguard at the wall-clock deadline.
 * - `crashed`: ended without complete per-test data, or by a signal
 *   shardguard did not send (including a `process.exit` with code 0 mid-file).
 * - `never-started`: planned but never spawned (cancellation, spawn failure).
 * - `skipped-by-diff`: a preset's diff selection proved none of its tests
 *   were selected; counts as success.
 */
export const SHARD_STATUSES = ["passed", "failed", "timed-out", "crashed", "never-started", "skipped-by-diff"] as const;
/**
 * Final state of one test case. `timed-out`, `crashed` and `never-started`
 * only come from shardguard's own knowledge (it killed the process, or the
 * process ended early); Bun never reports them.
 */
export const TEST_STATUSES = [
  "passed",
  "failed",
  "skipped",
  "todo",
  "timed-out",
  "crashed",
  "never-started",
  "skipped-by-diff",
] as const;
/**
 * What a failure entry stands for: `failure.type` and `attemptFailures[].type`
 * in report.json (report-model.ts: FailureKind). Bun's own name for an error
 * (`AssertionError`, `TypeError`, any `Error.name` a test sets) is free text
 * and goes beside it, in `errorName`, never here: a test cannot forge a kind.
 *
 * - `failure`: Bun reported the test or hook failed (its JUnit or its events);
 *   `errorName` has the error's name when Bun gave one.
 * - `timeout`: out of time: killed at shardguard's wall-clock deadline (status
 *   `timed-out`), or Bun's own per-test timeout as its events reported it
 *   (status `failed`; Bun's JUnit says `TimeoutError`, a `failure`).
 * - `crash`: the shard ended without finishing (a signal shardguard did not
 *   send, an exit before the end of the run, the run cancelled, shardguard
 *   failing to supervise it) while this entry was in flight or had no
 *   per-test data.
 * - `never-started`: planned or found, never run (the message says why).
 * - `load-error`: the file failed before any test was registered.
 * - `no-tests`: the file registered no test: an empty file (`skipped`;
 *   `failed` under `empty-files = "fail"`), or, with a non-zero exit, one that
 *   may have failed to load (`failed`: the message says).
 * - `not-selected`: not run because another test of the file is `.only`.
 * - `skipped-by-diff`: a preset's diff selection left the file out.
 * - `coverage-threshold`: every test passed, Bun exited 1 for coverage below
 *   the project's threshold.
 * - `error-between-tests`: Bun exited 1 though no test failed: an error
 *   outside any test.
 * - `junit-unreadable`: Bun finished, its JUnit was too large to read.
 * - `unreadable-event`: an inspector event too large to read may have been a
 *   test of this shard.
 */
export const FAILURE_KINDS = [
  "failure",
  "timeout",
  "crash",
  "never-started",
  "load-error",
  "no-tests",
  "not-selected",
  "skipped-by-diff",
  "coverage-threshold",
  "error-between-tests",
  "junit-unreadable",
  "unreadable-event",
] as const;
/** A failure kind (report-model.ts: FailureKind, the same union). */
export type FailureKindName = (typeof FAILURE_KINDS)[number];

/** A shard status (report-model.ts: ShardStatus, the same union). */
export type ShardStatusName = (typeof SHARD_STATUSES)[number];
/** A test status (report-model.ts: TestStatus, the same union). */
export type TestStatusName = (typeof TEST_STATUSES)[number];

/** The report's `summary` (report-model.ts: Summary, the same shape). Types of its own: report-model.ts imports this module. */
export interface SummaryCounts {
  shards: Record<ShardStatusName | "total", number>;
  tests: Record<TestStatusName | "total" | "flaky", number>;
}

/** What {@link summarize} reads of a shard result. */
export interface SummarizedShard {
  status: ShardStatusName;
  tests: readonly { status: TestStatusName; flaky?: boolean }[];
}

/** Zero counts for every shard and test status. */
export function emptySummary(): SummaryCounts {
  const zeros = <T extends readonly string[]>(keys: T) =>
    Object.fromEntries(keys.map((k) => [k, 0])) as { [K in T[number]]: number };
  return {
    shards: { ...zeros(SHARD_STATUSES), total: 0 },
    tests: { ...zeros(TEST_STATUSES), total: 0, flaky: 0 },
  };
}

/** Counts shards and tests by status. Pure; the report's `summary` field. */
export function summarize(shards: readonly SummarizedShard[]): SummaryCounts {
  const summary = emptySummary();
  for (const shard of shards) {
    summary.shards[shard.status] += 1;
    summary.shards.total += 1;
    for (const test of shard.tests) {
      summary.tests[test.status] += 1;
      summary.tests.total += 1;
      if (test.flaky) summary.tests.flaky += 1;
    }
  }
  return summary;
}

/**
 * Shard statuses that count as success for the exit code (docs/reports.md:
 * skipped-by-diff counts as passed).
 */
export const SUCCESSFUL_SHARD_STATUSES: ReadonlySet<ShardStatusName> = new Set(["passed", "skipped-by-diff"]);

/** Exit codes of a run (docs/reports.md). */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  sigint: 130,
  sigterm: 143,
} as const;
