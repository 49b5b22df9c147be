/**
 * `bun test` flags as shardguard reads them, and how they become each shard's flags. Parsing mirrors Bun's
 * (docs/bun-behaviour.md, "Command line"). Imports nothing heavy: the preload loads it on every `bun test`.
 */
/** One flag from a command line, with the tokens it was written as. */
export interface CommandFlag {
  /** Canonical (long) name, e.g. "--test-name-pattern" for "-t". */
  name: string;
  value: string | null;
  tokens: string[];
}

/** Short flags Bun knows, by their long names. */
const ALIASES: Readonly<Record<string, string>> = {
  "-t": "--test-name-pattern",
  "-u": "--update-snapshots",
  "-r": "--preload",
  "-d": "--define",
  "-l": "--loader",
  "-e": "--eval",
  "-p": "--print",
  "-c": "--config",
  "-b": "--bun",
  "-h": "--help",
};

/**
 * Flags that take the next argument as their value (`--retry 1`), as Bun parses `bun test`; `--bail`,
 * `--parallel`, `--changed`, `--config`, `--inspect*` take one only after "=".
 */
export const VALUE_FLAGS: ReadonlySet<string> = new Set([
  "--timeout",
  "--rerun-each",
  "--retry",
  "--seed",
  "--coverage-reporter",
  "--coverage-dir",
  "--test-name-pattern",
  "--reporter",
  "--reporter-outfile",
  "--max-concurrency",
  "--path-ignore-patterns",
  "--parallel-delay",
  "--shard",
  "--timings",
  "--preload",
  "--require",
  "--import",
  "--define",
  "--loader",
  "--eval",
  "--print",
  "--env-file",
  "--cwd",
  "--conditions",
  "--tsconfig-override",
  "--jsx-runtime",
  "--jsx-factory",
  "--jsx-fragment",
  "--jsx-import-source",
  "--main-fields",
  "--extension-order",
  "--port",
  "--console-depth",
  "--user-agent",
  "--dns-result-order",
  "--max-http-header-size",
  "--unhandled-rejections",
  "--title",
  "--install",
]);

/**
 * Flags shardguard cannot pass to shards, with the reason shown. `--shard`: Bun applies it before the preload runs
 * (docs/sharding.md); `--timings` flags are the run's own (commands/bun-plan-flags.ts), refused after "--".
 */
export const REFUSED_FLAGS: Readonly<Record<string, string>> = {
  "--parallel": "shardguard runs its own process pool (the preset's jobs setting sets its size)",
  "--test-worker": "it is Bun's internal worker flag",
  "--watch": "a shard run is not a watch session",
  "--shard":
    "Bun applies it to its own file list before the preset's preload runs, so every other slice runs nothing and " +
    "exits 0; use shardguard run --preset NAME --shard I/N",
  "--timings": 'it orders the whole run: give shardguard\'s own --timings FILE before "--"',
  "--update-timings": 'it records the whole run: give shardguard\'s own --update-timings FILE before "--"',
  "--hot": "a shard run is not a watch session",
  "--changed": "the preset's diff selection decides what runs",
  "--coverage": "coverage of separate shard processes is not merged",
  "--coverage-reporter": "coverage of separate shard processes is not merged",
  "--coverage-dir": "coverage of separate shard processes is not merged",
  "--reporter": "shardguard writes the JUnit and JSON reports itself (shardguard --junit / --json)",
  "--reporter-outfile": "shardguard writes the JUnit and JSON reports itself (shardguard --junit / --json)",
  "--dots": "shardguard writes the reports itself; shard output goes to per-shard logs",
};

/**
 * Why Bun would refuse these flags before running anything (`--retry` with `--rerun-each`), or null: every shard
 * would end as a load error, so it is exit 2 instead (docs/bun-behaviour.md, "Command line").
 */
export function bunFlagConflict(flags: readonly CommandFlag[]): string | null {
  const retry = flags.find((f) => f.name === "--retry");
  const rerun = flags.find((f) => f.name === "--rerun-each");
  if (retry && rerun)
    return (
      `${retry.tokens.join(" ")} and ${rerun.tokens.join(" ")} cannot be used together (bun test refuses ` +
      `--retry with --rerun-each)`
    );
  return null;
}

/** Flags dropped because shardguard sets them or consumed them itself. */
const DROPPED_FLAGS: ReadonlySet<string> = new Set(["--no-orphans"]);

/** A command line split into flags and positionals. */
export interface SplitArgs {
  flags: CommandFlag[];
  positionals: string[];
}

/** Splits `bun test` arguments (after `test`) into flags and positionals; `extraValued`: our own valued flags. */
export function splitBunTestArgs(args: readonly string[], extraValued: readonly string[] = []): SplitArgs {
  const flags: CommandFlag[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const written = eq > 0 ? arg.slice(0, eq) : arg;
    const name = ALIASES[written] ?? written;
    if (eq > 0) {
      flags.push({ name, value: arg.slice(eq + 1), tokens: [arg] });
      continue;
    }
    const next = args[i + 1];
    if ((VALUE_FLAGS.has(name) || extraValued.includes(name)) && next !== undefined) {
      flags.push({ name, value: next, tokens: [arg, next] });
      i++;
      continue;
    }
    flags.push({ name, value: null, tokens: [arg] });
  }
  return { flags, positionals };
}

/**
 * The flags of every shard: the preset's, each replaced in place by the line's flag of that name, then the line's
 * others, each as one `--name=value` token. `--no-orphans` is dropped (always set); `--timeout` and
 * `--max-concurrency` are not in `overrides` (they became settings).
 */
export function mergeShardFlags(presetFlags: readonly string[], overrides: readonly CommandFlag[]): string[] {
  const base = splitBunTestArgs(presetFlags).flags;
  const result: CommandFlag[] = [...base];
  for (const flag of overrides) {
    if (DROPPED_FLAGS.has(flag.name)) continue;
    const at = result.findIndex((f) => f.name === flag.name);
    if (at >= 0 && base.includes(result[at]!)) result[at] = flag;
    else result.push(flag);
  }
  return result.map((f) => (f.value === null ? f.name : `${f.name}=${f.value}`));
}

/** Replaces `{max-concurrency}` and `{timeout-ms}` in preset flags. */
export function expandFlagTemplates(
  flags: readonly string[],
  values: { maxConcurrency: number; timeoutMs: number },
): string[] {
  return flags.map((f) =>
    f
      .split("{max-concurrency}")
      .join(String(values.maxConcurrency))
      .split("{timeout-ms}")
      .join(String(values.timeoutMs)),
  );
}
