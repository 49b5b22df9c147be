/**
 * shardguard's public API, for the preset preload and for programs that embed
 * the runner. Everything here returns exit codes; nothing exits the process.
 */
export { main, planLines, type CliHost } from "./cli/main.ts";
export { executeRun } from "./cli/execute.ts";
export { preflight, MIN_BUN_VERSION } from "./cli/preflight.ts";
export { parseArgs, type ParsedArgs } from "./config/args.ts";
export { readBunfigTable, resolveSettings } from "./config/load.ts";
export { ConfigError, DEFAULTS, SETTINGS, type RunSettings } from "./config/schema.ts";
export { SHARD_ENV } from "./exec/command.ts";
export { DEFAULT_PATTERN, groupIntoShards, planRun, shardSlug, type Plan, type PlannedShard } from "./plan/plan.ts";
export { EXIT, type RunReport, type ShardResult, type ShardStatus, type TestStatus } from "./results/model.ts";
export { skippedByDiff } from "./results/verdict.ts";
export { Run, TOOL_VERSION, type RunInputs, type RunResult } from "./run.ts";
