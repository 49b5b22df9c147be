/**
 * shardguard's public API (`import … from "shardguard"`); everything returns exit codes, nothing exits the process.
 * - Run: {@link main} (argv in, exit code out), or {@link resolveSettings} → {@link planRun} →
 *   {@link preflight} → {@link executeRun} (or {@link Run} without console handling).
 * - Model and renderers: {@link RunReport}, {@link RunReportSchema}, {@link renderJUnit}, {@link renderJson},
 *   {@link renderCtrf}, {@link githubAnnotations} / {@link githubStepSummary}.
 * - Across machines: {@link slicePlan}, {@link mergeSlices}, {@link filesToRerun}; redaction: {@link makeRedactor},
 *   {@link redactReport}.
 */
export { main } from "./cli/main.ts";
export { processHost } from "./cli/process-host.ts";
export type { Host, Host as CliHost } from "./engine/host.ts";
export { planLines, runCommand } from "./commands/run-command.ts";
export { executeRun, type ExecuteResult } from "./engine/execute.ts";
export { preflight, MIN_BUN_VERSION } from "./commands/preflight-checks.ts";
export { parseArgs, type ParsedArgs } from "./config/args.ts";
export { readBunfigTable, resolveSettings } from "./config/load.ts";
export { ConfigError, DEFAULTS, SETTINGS, type RunSettings } from "./config/settings-schema.ts";
export { SHARD_ENV } from "./exec/bun-command.ts";
export { DEFAULT_PATTERN, groupIntoShards, planRun, shardSlug, type Plan, type PlannedShard } from "./plan/plan.ts";
export {
  EXIT,
  FAILURE_KINDS,
  REPORT_SCHEMA_VERSION,
  RunReportSchema,
  ShardResultSchema,
  SHARD_STATUSES,
  summarize,
  SUCCESSFUL_SHARD_STATUSES,
  TestResultSchema,
  TEST_STATUSES,
  type Failure,
  type FailureKind,
  type RunReport,
  type ShardResult,
  type ShardStatus,
  type Summary,
  type TestResult,
  type TestStatus,
} from "./results/report-model.ts";
export { skippedByDiff } from "./results/verdict.ts";
export {
  parseSliceSpec,
  sliceShards,
  sliceManifest,
  slicePlan,
  type SliceManifest,
  type SliceSpec,
} from "./plan/slice.ts";
export { mergeSlices, MergeError, type SliceReport } from "./results/merge.ts";
export { filesToRerun } from "./results/rerun.ts";
export { renderJUnit, type JUnitOptions } from "./report/junit.ts";
export { renderJson } from "./report/json.ts";
export { buildCtrf, renderCtrf, CTRF_STATUS, type CtrfReport } from "./report/ctrf.ts";
export { githubAnnotations, githubStepSummary, type GithubOptions } from "./report/github-render.ts";
export { makeRedactor, redactReport, type Redactor } from "./results/redact.ts";
export { Run, type RunInputs, type RunResult } from "./engine/run.ts";
export { TOOL_VERSION } from "./util/version.ts";
