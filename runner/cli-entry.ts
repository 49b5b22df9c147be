#!/usr/bin/env bun
/**
 * The `shardguard` command, the only place that calls `process.exit` (exit codes: docs/configuration.md, "Exit
 * codes"). No top-level await: the compiled CLI is this file bundled as CommonJS.
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
/** Resolves once `stream` has handed every earlier write to the OS, or failed. Bun's write callback and
 * `writableLength` say done while a pipe still holds the rest back; `end` waits for it. */
const ended = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => {
    if (stream.destroyed || !stream.writable) return resolve();
    stream.once("error", () => resolve());
    stream.end(() => resolve());
  });
// A reader slower than the output (`history --json | jq`) would otherwise get only the pipe's first 64 KiB.
running.then(
  (code) => Promise.all([ended(process.stdout), ended(process.stderr)]).then(() => process.exit(code)),
  fail,
);
