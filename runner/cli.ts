#!/usr/bin/env bun
/**
 * The `shardguard` command. The only place that calls `process.exit`.
 *
 * Exit codes (docs/reports.md): 0 every planned shard passed (skipped-by-diff counts
 * as passed); 1 anything failed, timed out, crashed or never started; 2 usage
 * or configuration error, nothing ran; 130 / 143 cancelled by SIGINT / SIGTERM.
 */
import { main } from "./cli/main.ts";

const code = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: (text) => process.stdout.write(text + "\n"),
  stderr: (text) => process.stderr.write(text + "\n"),
  write: (text) => process.stdout.write(text),
  isTTY: Boolean(process.stdout.isTTY),
  columns: process.stdout.columns,
  onSignal: (handler) => {
    process.on("SIGINT", () => handler("SIGINT"));
    process.on("SIGTERM", () => handler("SIGTERM"));
  },
});
process.exit(code);
