/**
 * `bun test` flags that mean, for a whole suite, what a shardguard run flag
 * means, taken over when the preset preload runs `bun test --preset NAME`
 * instead of being refused (Bun 1.4.4's `bun test --help`):
 *
 * - `--timings=FILE` (repeatable; "several are merged") reads Bun's per-file
 *   durations: shardguard's `--timings`, which reads the same format and
 *   starts the longest shards first;
 * - `--update-timings` writes the measured durations "to the first --timings
 *   file": shardguard's `--update-timings FILE` with that file. (Bun itself
 *   never gets to write it: the preload ends the process before any test.)
 *
 * `--shard=I/N` is not among them: Bun slices its test files before any
 * preload runs, so only the slice holding the entry file ever reaches
 * shardguard; it stays refused (preset-lib/flags.ts, docs/sharding.md).
 * Everything else stays a flag of every shard (or is refused by
 * preset-lib/session.ts `checkShardFlags`).
 */
import { ConfigError } from "../config/schema.ts";
import type { CommandFlag } from "../preset-lib/flags.ts";

/** The split of a `bun test` command line's flags. */
export interface TakenPlanFlags {
  /** Arguments for shardguard's run parser, e.g. ["--timings", "a.json,b.json", "--update-timings", "a.json"]. */
  runArgs: string[];
  /** The flags left for every shard. */
  shardFlags: CommandFlag[];
}

/**
 * Takes `--timings` and `--update-timings` out of a `bun test` command
 * line's flags.
 *
 * @throws ConfigError (exit 2, nothing started) for a `--timings` without a
 *   file, or `--update-timings` with a value or without a `--timings` file
 *   (Bun would have nowhere to write either)
 */
export function takeOverBunPlanFlags(flags: readonly CommandFlag[]): TakenPlanFlags {
  const shardFlags: CommandFlag[] = [];
  const timings: string[] = [];
  let update = false;
  for (const flag of flags) {
    if (flag.name === "--timings") {
      if (flag.value === null || flag.value === "") throw new ConfigError(`bun test: ${flag.tokens.join(" ")} needs a file (e.g. --timings=timings.json)`);
      timings.push(flag.value);
    } else if (flag.name === "--update-timings") {
      if (flag.value !== null) throw new ConfigError(`bun test: --update-timings takes no value (${flag.tokens.join(" ")}); it writes to the first --timings file`);
      update = true;
    } else shardFlags.push(flag);
  }
  if (update && timings.length === 0) throw new ConfigError(`bun test: --update-timings writes to the first --timings file; give --timings=FILE too`);
  const runArgs = timings.length > 0 ? ["--timings", timings.join(",")] : [];
  if (update) runArgs.push("--update-timings", timings[0]!);
  return { runArgs, shardFlags };
}
