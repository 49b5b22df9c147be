// What `import "shardguard"` resolves to outside Bun (package.json "exports":
// the "bun" condition comes first). No other runtime can load shardguard's
// TypeScript sources, so it says so instead of failing on a file extension.
// The names below are runner/index.ts's, so that an import of any of them
// links and this line is what the user reads (test/api-doc.test.ts keeps them equal).
import { readFileSync } from "node:fs";

throw new Error(
  `${readFileSync(new URL("not-bun.txt", import.meta.url), "utf8").trim()} (this is ${process.release.name} ${process.version})`,
);

export const {
  CTRF_STATUS,
  ConfigError,
  DEFAULTS,
  DEFAULT_PATTERN,
  EXIT,
  FAILURE_KINDS,
  MIN_BUN_VERSION,
  MergeError,
  REPORT_SCHEMA_VERSION,
  Run,
  RunReportSchema,
  SETTINGS,
  SHARD_ENV,
  SHARD_STATUSES,
  SUCCESSFUL_SHARD_STATUSES,
  ShardResultSchema,
  TEST_STATUSES,
  TOOL_VERSION,
  TestResultSchema,
  buildCtrf,
  executeRun,
  filesToRerun,
  githubAnnotations,
  githubStepSummary,
  groupIntoShards,
  main,
  makeRedactor,
  mergeSlices,
  parseArgs,
  parseSliceSpec,
  planLines,
  planRun,
  preflight,
  processHost,
  readBunfigTable,
  redactReport,
  renderCtrf,
  renderJUnit,
  renderJson,
  resolveSettings,
  runCommand,
  shardSlug,
  skippedByDiff,
  sliceManifest,
  slicePlan,
  sliceShards,
  summarize,
} = {};
