/**
 * shardguard's `bun test` preload. Register it in bunfig.toml:
 *
 *   [test]
 *   preload = ["shardguard/preset/preload.ts"]
 *
 * In a top-level `bun test` process with `--preset NAME`, or with only the
 * files of a preset as arguments, it runs the preset through shardguard's
 * isolated runner and exits with the run's exit code before any test file
 * loads. Anywhere else (plain `bun test`, shard children, `--parallel`
 * workers) it returns at once. Rules: docs/presets.md.
 */
import { processHost } from "../runner/cli/process-host.ts";
import { interceptBunTest } from "../runner/commands/preload-take-over.ts";

const code = await interceptBunTest({ ...processHost(), pid: process.pid, ppid: process.ppid });
if (code !== null) process.exit(code);
