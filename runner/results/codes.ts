/** The model's constants without zod (report-model.ts re-exports them): schemas wait for a report (bench/README.md). */
/** Version of the JSON report layout; bump on any breaking change. */
export const REPORT_SCHEMA_VERSION = 2;

/** Final state of one shard (docs/reports.md, "Shard statuses"). */
export const SHARD_STATUSES = ["passed", "failed", "timed-out", "crashed", "never-started", "skipped-by-diff"] as const;
/** Final state of one test (docs/reports.md, "Test statuses"); Bun never reports timed-out, crashed, never-started. */
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
/** What a failure entry stands for (docs/reports.md, "Failure kinds"); never Bun's error name, which a test sets. */
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

/** The report's `summary` (report-model.ts: Summary); its own type because report-model.ts imports this module. */
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

/** Shard statuses that count as success for the exit code (docs/reports.md). */
export const SUCCESSFUL_SHARD_STATUSES: ReadonlySet<ShardStatusName> = new Set(["passed", "skipped-by-diff"]);

/** Exit codes of a run (docs/reports.md). */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  sigint: 130,
  sigterm: 143,
} as const;
