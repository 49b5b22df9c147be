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
 * shardguard; it stays refused (presets/flags.ts, docs/sharding.md).
 * Everything else stays a flag of every shard (or is refused by
 * presets/session.ts `checkShardFlags`).
 */
import { RUN_FLAGS } from "../config/args.ts";
import { BOOLEAN_FLAGS, ConfigError, SETTINGS } from "../config/settings-schema.ts";
import { bunFlagConflict, splitBunTestArgs, type CommandFlag } from "../presets/flags.ts";

/**
 * Flags of `shardguard run` that `bun test` (1.4.4, `bun test --help`) does
 * not have. Bun ignores an unknown flag, and shardguard would pass it to
 * every shard, which ignores it too: `bun test --preset NAME --last-failed`
 * reran the whole tier and `--jobs=1` still ran 4 shards at once, with only
 * the header's "shard flags" line showing it. They are refused instead.
 * Names Bun shares are left out: `--timeout` (the shard timeout),
 * `--timings` and `--update-timings` (taken over below), `--bun` (Bun's own
 * runtime flag) and `--shard` (refused with its own reason, presets/flags.ts).
 */
const SHARDGUARD_ONLY_FLAGS: ReadonlySet<string> = new Set(
  [...SETTINGS.map((s) => s.flag), ...Object.keys(BOOLEAN_FLAGS), ...RUN_FLAGS.valued, ...RUN_FLAGS.boolean].filter(
    (flag) => !["--timeout", "--timings", "--update-timings", "--bun", "--shard", "--preset", "--tier"].includes(flag),
  ),
);

/** The split of a `bun test` command line's flags. */
export interface TakenPlanFlags {
  /** Arguments for shardguard's run parser, e.g. ["--timings", "a.json,b.json", "--update-timings", "a.json"]. */
  runArgs: string[];
  /** The flags left for every shard. */
  shardFlags: CommandFlag[];
}

/** The flags of {@link SHARDGUARD_ONLY_FLAGS} that take no value. */
const BOOLEAN_RUN_FLAGS: ReadonlySet<string> = new Set([...Object.keys(BOOLEAN_FLAGS), ...RUN_FLAGS.boolean]);

/**
 * Takes `--timings` and `--update-timings` out of a `bun test` command
 * line's flags.
 *
 * @throws ConfigError (exit 2, nothing started) for a `--timings` without a
 *   file, `--update-timings` with a value or without a `--timings` file
 *   (Bun would have nowhere to write either), or a flag only `shardguard run`
 *   has ({@link SHARDGUARD_ONLY_FLAGS})
 */
export function takeOverBunPlanFlags(flags: readonly CommandFlag[]): TakenPlanFlags {
  const shardFlags: CommandFlag[] = [];
  const timings: string[] = [];
  let update = false;
  for (const flag of flags) {
    if (SHARDGUARD_ONLY_FLAGS.has(flag.name)) {
      throw new ConfigError(
        `bun test: ${flag.tokens.join(" ")} is a flag of shardguard run, not of bun test (Bun and every shard would ignore it); use shardguard run --preset NAME ${flag.name}${BOOLEAN_RUN_FLAGS.has(flag.name) ? "" : " VALUE"}`,
      );
    }
    if (flag.name === "--timings") {
      if (flag.value === null || flag.value === "")
        throw new ConfigError(`bun test: ${flag.tokens.join(" ")} needs a file (e.g. --timings=timings.json)`);
      timings.push(flag.value);
    } else if (flag.name === "--update-timings") {
      if (flag.value !== null)
        throw new ConfigError(
          `bun test: --update-timings takes no value (${flag.tokens.join(" ")}); it writes to the first --timings file`,
        );
      update = true;
    } else shardFlags.push(flag);
  }
  if (update && timings.length === 0)
    throw new ConfigError(`bun test: --update-timings writes to the first --timings file; give --timings=FILE too`);
  const runArgs = timings.length > 0 ? ["--timings", timings.join(",")] : [];
  if (update) runArgs.push("--update-timings", timings[0]!);
  return { runArgs, shardFlags };
}

/**
 * Refuses, in the `bun test` flags after "--" of `shardguard run|list|bg`,
 * the flags that are shardguard's own or that slice the whole run: every
 * shard would get them, and `bun test` ignores an unknown flag
 * (`-- --last-failed` reran everything) or applies `--shard` to each
 * shard's own files (every shard but one ran nothing).
 *
 * Also refuses a file or filter there (each shard would run it beside its
 * own files) and a combination `bun test` itself refuses (presets/flags.ts
 * {@link bunFlagConflict}).
 *
 * @throws ConfigError (exit 2, nothing started) naming the flag and where it belongs
 */
export function refuseRunFlagsAfterDash(bunArgs: readonly string[]): void {
  const { flags, positionals } = splitBunTestArgs(bunArgs);
  // Every shard would run what a path or filter there names beside its own files, and blame its tests on them.
  if (positionals.length > 0) {
    throw new ConfigError(
      `bun test flags after "--" cannot include files or filters (${JSON.stringify(positionals[0])}); put PATTERNs before "--" (a flag's value: write --flag=VALUE)`,
    );
  }
  const conflict = bunFlagConflict(flags);
  if (conflict) throw new ConfigError(`bun test flags after "--": ${conflict}`);
  for (const flag of flags) {
    if (flag.name === "--shard") {
      throw new ConfigError(
        `${flag.tokens.join(" ")} after "--" would slice each shard's own files (the other slices of every shard run nothing); give shardguard's --shard I/N before "--"`,
      );
    }
    if (SHARDGUARD_ONLY_FLAGS.has(flag.name) || flag.name === "--preset" || flag.name === "--tier") {
      throw new ConfigError(
        `${flag.tokens.join(" ")} after "--" is a flag of shardguard run, not of bun test (every shard would ignore it); put it before "--"`,
      );
    }
  }
}
