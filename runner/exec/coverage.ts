/**
 * Bun's coverage and the shard child (issue 25, item 7). Two facts,
 * measured on Bun 1.4.4 and 1.3.13 with `[test] coverage = true` and
 * `coverageThreshold = 0.9`:
 *
 * - every file the child loads counts toward the project's coverage table
 *   and threshold, our `--preload` included (it showed at 46.67% and failed
 *   a fully covered project), unless its path has a `node_modules`
 *   directory: those are left out. Bun has no command-line flag for
 *   `coveragePathIgnorePatterns`, and the project's bunfig.toml is not ours
 *   to edit, so the shards load a copy of the preload under a
 *   `node_modules` directory ({@link coverageSafePreload});
 * - a threshold that is not met makes `bun test` exit 1 with every test
 *   passed. The shard's verdict names that from structured data only: the
 *   exit code, every test passed, no error reported between tests, the
 *   child reaching its normal end, and a threshold set
 *   ({@link coverageThreshold}); never from the coverage table, which a
 *   test could print itself.
 */
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { readRegularTextSync } from "../util/regular-file.ts";
import { SHARD_PRELOAD } from "./bun-command.ts";

/**
 * The path of the child preload the shards of a run load: {@link SHARD_PRELOAD}
 * itself when it already lies under a `node_modules` directory (an installed
 * package), else a copy at `<dir>/node_modules/shardguard/shard-preload.ts`
 * beside a copy of every other source file of its folder (runner/child/,
 * which imports nothing else), so a copy runs the same.
 *
 * @param dir a directory of the run's own (OUT/runs/<run id>)
 * @throws the file system error of the copy (the caller may fall back to SHARD_PRELOAD)
 */
export function coverageSafePreload(dir: string): string {
  if (SHARD_PRELOAD.split(path.sep).includes("node_modules")) return SHARD_PRELOAD;
  const target = path.join(dir, "node_modules", "shardguard", path.basename(SHARD_PRELOAD));
  mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
  const source = path.dirname(SHARD_PRELOAD);
  for (const name of readdirSync(source)) {
    if (name.endsWith(".ts")) copyFileSync(path.join(source, name), path.join(path.dirname(target), name));
  }
  return target;
}

/**
 * The coverage threshold Bun enforces in a shard, as shown in a reason
 * (`coverageThreshold 0.9`, `coverageThreshold { lines = 0.9 }`), or null
 * when Bun will not fail a run on coverage: coverage off (neither
 * `[test] coverage = true` nor `--coverage` / `--coverage-reporter`), or no
 * `[test] coverageThreshold`. Read from the bunfig.toml Bun reads in the
 * shard's working directory `root` (or the one `--config` / `-c` names);
 * the global `~/.bunfig.toml` is not read. A bunfig that cannot be read or
 * parsed gives null (Bun itself then reports it).
 */
export function coverageThreshold(root: string, bunArgs: readonly string[]): string | null {
  let config = path.join(root, "bunfig.toml");
  bunArgs.forEach((arg, i) => {
    const m = /^(?:--config|-c)=(.+)$/.exec(arg);
    if (m) config = path.resolve(root, m[1]!);
    else if ((arg === "--config" || arg === "-c") && bunArgs[i + 1] !== undefined)
      config = path.resolve(root, bunArgs[i + 1]!);
  });
  let test: Record<string, unknown> | undefined;
  try {
    test = (Bun.TOML.parse(readRegularTextSync(config)) as { test?: Record<string, unknown> }).test;
  } catch {
    return null;
  }
  const enabled =
    test?.coverage === true || bunArgs.some((a) => a === "--coverage" || a.startsWith("--coverage-reporter"));
  const threshold = test?.coverageThreshold;
  if (!enabled || threshold === undefined) return null;
  if (typeof threshold === "number") return `coverageThreshold ${threshold}`;
  if (typeof threshold === "object" && threshold !== null) {
    const parts = Object.entries(threshold).map(([k, v]) => `${k} = ${String(v)}`);
    return `coverageThreshold { ${parts.join(", ")} }`;
  }
  return null;
}
