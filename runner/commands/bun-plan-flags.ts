/**
 * `bun test` flags that mean for a whole suite what a shardguard run flag means (`--timings=FILE`,
 * `--update-timings`), taken over on `bun test --preset NAME` instead of refused. `--shard` is not: Bun slices
 * its files before any preload runs, so it stays refused (presets/flags.ts, docs/sharding.md).
 */
import { RUN_FLAGS } from "../config/args.ts";
import { BOOLEAN_FLAGS, ConfigError, SETTINGS } from "../config/settings-schema.ts";
import { bunFlagConflict, splitBunTestArgs, type CommandFlag } from "../presets/flags.ts";
import { unknownBunFlag } from "../presets/unknown-flags.ts";

/**
 * Flags of `shardguard run` that `bun test` lacks. Bun ignores an unknown flag and so would every shard
 * (`--last-failed` reran the whole tier), so they are refused; names Bun shares are left out.
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
 * Refuses a long flag Bun does not know: Bun ignored it (and took its value for a path filter), every shard would.
 * @throws ConfigError naming the flag and the closest known one
 */
function refuseUnknownFlags(flags: readonly CommandFlag[], helpFlags?: () => ReadonlySet<string>): void {
  const unknown = unknownBunFlag(
    flags.map((f) => f.name),
    SHARDGUARD_ONLY_FLAGS,
    helpFlags,
  );
  if (!unknown) return;
  const { flag, suggestion } = unknown;
  const where =
    suggestion !== null && SHARDGUARD_ONLY_FLAGS.has(suggestion)
      ? ` (a shardguard run flag: shardguard run --preset NAME ${suggestion}` +
        `${BOOLEAN_RUN_FLAGS.has(suggestion) ? "" : " VALUE"})`
      : "";
  throw new ConfigError(
    `bun test: unknown flag ${flag}` +
      (suggestion === null
        ? "; Bun and every shard would ignore it (bun test --help lists Bun's flags)"
        : `; did you mean ${suggestion}${where}? Bun and every shard would ignore ${flag}`),
  );
}

/**
 * Takes `--timings` and `--update-timings` out of a `bun test` command line's flags.
 *
 * @throws ConfigError (exit 2, nothing started) for a `--timings` without a file, `--update-timings` with a value
 *   or without a `--timings` file, a flag only `shardguard run` has ({@link SHARDGUARD_ONLY_FLAGS}), or a flag Bun
 *   does not know
 */
export function takeOverBunPlanFlags(
  flags: readonly CommandFlag[],
  helpFlags?: () => ReadonlySet<string>,
): TakenPlanFlags {
  refuseUnknownFlags(flags, helpFlags);
  const shardFlags: CommandFlag[] = [];
  const timings: string[] = [];
  let update = false;
  for (const flag of flags) {
    if (SHARDGUARD_ONLY_FLAGS.has(flag.name)) {
      throw new ConfigError(
        `bun test: ${flag.tokens.join(" ")} is a flag of shardguard run, not of bun test (Bun and every shard would ` +
          `ignore it); use shardguard run --preset NAME ` +
          `${flag.name}${BOOLEAN_RUN_FLAGS.has(flag.name) ? "" : " VALUE"}`,
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
 * Refuses, after "--" of `shardguard run|list|bg`, our own flags and `--shard` (every shard would get them), a
 * file or filter (each shard would run it too), and a combination Bun refuses ({@link bunFlagConflict}).
 * @throws ConfigError (exit 2, nothing started) naming the flag and where it belongs
 */
export function refuseRunFlagsAfterDash(bunArgs: readonly string[]): void {
  const { flags, positionals } = splitBunTestArgs(bunArgs);
  // Every shard would run what a path or filter there names beside its own files, and blame its tests on them.
  if (positionals.length > 0) {
    throw new ConfigError(
      `bun test flags after "--" cannot include files or filters (${JSON.stringify(positionals[0])}); put PATTERNs ` +
        `before "--" (a flag's value: write --flag=VALUE)`,
    );
  }
  const conflict = bunFlagConflict(flags);
  if (conflict) throw new ConfigError(`bun test flags after "--": ${conflict}`);
  for (const flag of flags) {
    if (flag.name === "--shard") {
      throw new ConfigError(
        `${flag.tokens.join(" ")} after "--" would slice each shard's own files (the other slices of every shard run ` +
          `nothing); give shardguard's --shard I/N before "--"`,
      );
    }
    if (SHARDGUARD_ONLY_FLAGS.has(flag.name) || flag.name === "--preset" || flag.name === "--tier") {
      throw new ConfigError(
        `${flag.tokens.join(" ")} after "--" is a flag of shardguard run, not of bun test (every shard would ignore ` +
          `it); put it before "--"`,
      );
    }
  }
}
