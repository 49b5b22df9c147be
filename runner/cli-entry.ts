#!/usr/bin/env bun
/**
 * The `shardguard` command. The only place that calls `process.exit`.
 *
 * Exit codes (docs/reports.md): 0 every planned shard passed (skipped-by-diff counts
 * as passed); 1 anything failed, timed out, crashed or never started; 2 usage
 * or configuration error, nothing ran; 130 / 143 cancelled by SIGINT / SIGTERM.
 *
 * No top-level await: the compiled CLI (runner/cli/compiled.ts) is this
 * file bundled as CommonJS.
 */
import { main } from "./cli/main.ts";
import { processHost } from "./cli/process-host.ts";

void main(process.argv.slice(2), processHost()).then((code) => process.exit(code));
