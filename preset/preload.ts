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
import { interceptBunTest } from "../runner/presets/intercept.ts";

const code = await interceptBunTest({
  env: process.env,
  cwd: process.cwd(),
  pid: process.pid,
  ppid: process.ppid,
  stdout: (text) => process.stdout.write(text + "\n"),
  stderr: (text) => process.stderr.write(text + "\n"),
  write: (text) => process.stdout.write(text),
  isTTY: Boolean(process.stdout.isTTY),
  ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
  onSignal: (handler) => {
    process.on("SIGINT", () => handler("SIGINT"));
    process.on("SIGTERM", () => handler("SIGTERM"));
  },
});
if (code !== null) process.exit(code);
