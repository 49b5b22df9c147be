/**
 * Command-line parsing for `shardguard run` and `shardguard list`.
 *
 * Strict by design: an unknown flag is a usage error, never silently ignored
 * (Bun ignores unknown `bun test` flags, which is how `--preset` typos turn
 * into filters; we do not repeat that).
 */
import { BOOLEAN_FLAGS, ConfigError, SETTINGS, type SettingSpec } from "./schema.ts";

/** What the command line said, before merging with environment and bunfig.toml. */
export interface ParsedArgs {
  /** Raw flag values keyed by setting key, as written. */
  values: Map<SettingSpec["key"], string>;
  /** Boolean flags present, e.g. "--no-test-events". */
  booleans: Set<keyof typeof BOOLEAN_FLAGS>;
  /** Positional arguments before `--`: file globs relative to root. */
  patterns: string[];
  /** Everything after `--`, passed to each `bun test` child unchanged. */
  bunArgs: string[];
  help: boolean;
}

/** Flags understood by a command beyond the shared settings table. */
export interface ExtraFlags {
  /** Flags that take a value, e.g. "--preset". */
  valued?: readonly string[];
  /** Flags without a value, e.g. "--dry-run". */
  boolean?: readonly string[];
}

/**
 * Flags `run` and `list` take beyond the settings table: a preset and its
 * tier, one slice of the plan for a CI matrix (`--shard I/N`), and a rerun
 * of the last report's non-passing files (`--last-failed`).
 */
export const RUN_FLAGS = { valued: ["--preset", "--tier", "--shard"], boolean: ["--last-failed"] } as const satisfies ExtraFlags;

/** Result of {@link parseArgs} with the extra flags a command declared. */
export interface ParsedWithExtras extends ParsedArgs {
  extras: Map<string, string | true>;
}

/**
 * Parses `[PATTERN...] [--flag value | --flag=value]... [-- BUN_TEST_FLAGS...]`.
 *
 * @throws ConfigError on an unknown flag, a missing value or a repeated flag
 */
export function parseArgs(argv: readonly string[], command: string, extra: ExtraFlags = {}): ParsedWithExtras {
  const parsed: ParsedWithExtras = {
    values: new Map(),
    booleans: new Set(),
    patterns: [],
    bunArgs: [],
    help: false,
    extras: new Map(),
  };
  const byFlag = new Map(SETTINGS.map((s) => [s.flag, s]));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      parsed.bunArgs = argv.slice(i + 1);
      break;
    }
    if (arg === "-h" || arg === "--help") {
      parsed.help = true;
      continue;
    }
    if (!arg.startsWith("-") || arg === "-") {
      parsed.patterns.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    const takeValue = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) {
        throw new ConfigError(`flag ${flag} needs a value (shardguard ${command} --help lists the flags)`);
      }
      i++;
      return next;
    };
    const spec = byFlag.get(flag);
    if (spec) {
      if (parsed.values.has(spec.key)) throw new ConfigError(`flag ${flag} was given twice`);
      parsed.values.set(spec.key, takeValue());
      continue;
    }
    if (flag in BOOLEAN_FLAGS) {
      if (inline !== undefined) throw new ConfigError(`flag ${flag} takes no value (got ${JSON.stringify(arg)})`);
      parsed.booleans.add(flag as keyof typeof BOOLEAN_FLAGS);
      continue;
    }
    if (extra.valued?.includes(flag)) {
      parsed.extras.set(flag, takeValue());
      continue;
    }
    if (extra.boolean?.includes(flag) && inline === undefined) {
      parsed.extras.set(flag, true);
      continue;
    }
    throw new ConfigError(
      `unknown flag ${flag} for shardguard ${command}; flags for bun test go after "--" (shardguard ${command} --help lists the flags)`,
    );
  }
  return parsed;
}
