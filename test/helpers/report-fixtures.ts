/**
 * Builders for valid RunReport objects in tests. Each builder fills the
 * fields a test does not care about with plausible values; the report's
 * summary is computed from its shards.
 */
import {
  REPORT_SCHEMA_VERSION,
  summarize,
  type RunReport,
  type ShardResult,
  type TestResult,
} from "../../runner/results/report-model.ts";

/** A test result; defaults: passed, 12.5 ms, line 1, not retried. */
export function makeTest(fields: Partial<TestResult> & Pick<TestResult, "name" | "file">): TestResult {
  return {
    status: "passed",
    durationMs: 12.5,
    line: 1,
    retries: 0,
    flaky: false,
    attemptFailures: [],
    synthetic: false,
    ...fields,
  };
}

/** A shard; defaults: passed, exit 0, files = the files of its tests (or one placeholder file). */
export function makeShard(fields: Partial<ShardResult> & Pick<ShardResult, "index">): ShardResult {
  const tests = fields.tests ?? [];
  const files = fields.files ?? [...new Set(tests.map((t) => t.file))];
  return {
    slug: `shard-${fields.index}`,
    files: files.length > 0 ? files : [`test/placeholder-${fields.index}.test.ts`],
    status: "passed",
    exitCode: 0,
    signal: null,
    killedBy: null,
    durationMs: 1500,
    startedAt: "2025-01-02T03:04:05.000Z",
    logPath: `.shardguard/logs/${fields.index}.log`,
    logIncomplete: false,
    reason: "exited 0",
    testSource: "junit",
    tests,
    ...fields,
    leftovers: fields.leftovers ?? [],
  };
}

/** A shard that Bun ran to the end with one failing test among `tests` (exit 1). */
export function failedShard(index: number, tests: TestResult[]): ShardResult {
  return makeShard({ index, status: "failed", exitCode: 1, reason: "1 test failed", tests });
}

/** A completed run with the given shards. */
export function makeReport(shards: ShardResult[], fields: Partial<RunReport> = {}): RunReport {
  return {
    schemaVersion: REPORT_SCHEMA_VERSION,
    runId: "run-1",
    completed: true,
    cancelledBy: null,
    startedAt: "2025-01-02T03:04:00.000Z",
    finishedAt: "2025-01-02T03:05:00.000Z",
    durationMs: 60_000,
    exitCode: 1,
    root: ".",
    tool: { name: "shardguard", version: "0.1.0" },
    bun: { version: "1.4.4", path: "bun" },
    settings: { jobs: 2, timeoutMs: 1_800_000, graceMs: 5000, filesPerShard: 1, bunArgs: [] },
    summary: summarize(shards),
    shards,
    ...fields,
    sweeps: fields.sweeps ?? { staleRuns: [], endOfRun: [] },
    preset: fields.preset ?? null,
    plan: fields.plan ?? null,
    slice: fields.slice ?? null,
    merged: fields.merged ?? null,
    rerunOf: fields.rerunOf ?? null,
  };
}
