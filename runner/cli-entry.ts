#!/usr/bin/env bun
/**
 * The `shardguard` command. The only place that calls `process.exit`.
 *
 * Exit codes (docs/reports.md): 0 every planned shard passed (skipped-by-diff counts
 * as passed); 1 anything failed, timed out, crashed or never started, or
 * shardguard itself failed (an internal error: one line naming the file with
 * its stack trace, cli/internal-error.ts); 2 usage or configuration error,
 * nothing ran; 130 / 143 cancelled by SIGINT / SIGTERM.
 *
 * No top-level await: the compiled CLI (runner/cli/compiled.ts) is this
 * file bundled as CommonJS.
 */
import { internalError } from "./cli/internal-error.ts";
import { main } from "./cli/main.ts";
import { processHost } from "./cli/process-host.ts";

const argv = process.argv.slice(2);
// A bug anywhere (thrown, rejected, or in a callback) ends in one line, not in a trace of the bundle.
const fail = (error: unknown): never => {
  const { line, code } = internalError(error, argv);
  process.stderr.write(`${line}\n`);
  process.exit(code);
};
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
let running: Promise<number>;
try {
  running = main(argv, processHost());
} catch (error) {
  running = Promise.reject(error);
}
running.then((code) => process.exit(code), fail);
