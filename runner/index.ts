/**
 * shardguard's public API (`import … from "shardguard"`), for the preset
 * preload and for programs that embed the runner: run a plan, render and
 * validate reports. Everything here returns exit codes; nothing exits the
 * process.
 *
 * - Run: {@link main} (the whole CLI, argv in, exit code out; the host defaults
 *   to the real process, {@link processHost}), or
 *   {@link resolveSettings} → {@link planRun} → {@link preflight} →
 *   {@link executeRun} (or {@link Run} without console handling).
 * - Result model: {@link RunReport} and its parts, validated by
 *   {@link RunReportSchema} (zod; docs/report.schema.json is generated from it).
 * - Renderers, pure functions of a RunReport: {@link renderJUnit} (JUnit
 *   XML), {@link renderJson} (report.json), {@link renderCtrf} (CTRF), and
 *   {@link githubAnnotations} / {@link githubStepSummary} (GitHub Actions).
 * - Across machines: {@link slicePlan} (`--shard I/N`), {@link mergeSlices}
 *   (`shardguard merge`, pure), {@link filesToRerun} (`--last-failed`).
 * - Redaction: {@link makeRedactor} and {@link redactReport}, applied to a
 *   report before rendering it for anyone else.
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
