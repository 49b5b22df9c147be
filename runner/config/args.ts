/**
 * Command-line parsing for `shardguard run` and `list`. Strict: an unknown flag is a usage error, never ignored
 * as Bun ignores it (how `--preset` typos become filters).
 */
import { parseArgs as nodeParseArgs } from "node:util";
import { BOOLEAN_FLAGS, ConfigError, SETTINGS, type SettingSpec } from "./settings-schema.ts";

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

/** Flags `run` and `list` take beyond the settings table: `--preset`, `--tier`, `--shard I/N`, `--last-failed`. */
export const RUN_FLAGS = {
  valued: ["--preset", "--tier", "--shard", "--history"],
  boolean: ["--last-failed", "--no-history"],
} as const satisfies ExtraFlags;

/** Result of {@link parseArgs} with the extra flags a command declared. */
export interface ParsedWithExtras extends ParsedArgs {
  extras: Map<string, string | true>;
}

/** One argument of an argv as {@link readArgv} reads it. */
export type ArgvToken =
  /**
   * A flag as written up to any `=` (`"--help"` for `-h`); `known`: one of the flags asked for (a group such as
   * `-hx` is one unknown token). `value`: the `=` part or, for a valued flag, the next argument.
   */
  | { kind: "flag"; flag: string; arg: string; known: boolean; value: string | undefined; inline: boolean }
  | { kind: "positional"; value: string }
  /** `--`; `rest` is every argument after it. */
  | { kind: "end"; rest: string[] };

/**
 * Reads argv with `node:util` `parseArgs` tokens, one per argument; not `strict`, which refuses values starting
 * with `-`, allows repeats and words errors its own way: each parser applies and words its own rules.
 *
 * @param valued long flags that take a value, e.g. `["--jobs"]`
 * @param boolean long flags without a value; `"--help"` here also reads `-h`
 */
export function readArgv(argv: readonly string[], valued: readonly string[], boolean: readonly string[]): ArgvToken[] {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const f of boolean) options[f.slice(2)] = f === "--help" ? { type: "boolean", short: "h" } : { type: "boolean" };
  for (const f of valued) options[f.slice(2)] = { type: "string" };
  const { tokens } = nodeParseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const out: ArgvToken[] = [];
  let lastIndex = -1;
  for (const t of tokens) {
    if (t.kind === "option-terminator") return [...out, { kind: "end", rest: argv.slice(t.index + 1) }];
    if (t.kind === "positional") {
      out.push({ kind: "positional", value: t.value });
      continue;
    }
    if (t.index === lastIndex) continue; // the rest of a short group such as -abc
    lastIndex = t.index;
    const arg = argv[t.index]!;
    const long = t.rawName.startsWith("--") && Object.hasOwn(options, t.name);
    const known = long || (arg === "-h" && Object.hasOwn(options, "help"));
    const eq = arg.indexOf("=");
    const flag = known ? `--${t.name}` : eq > 0 ? arg.slice(0, eq) : arg;
    out.push({
      kind: "flag",
      flag,
      arg,
      known,
      value: known ? t.value : undefined,
      inline: known && t.inlineValue === true,
    });
  }
  return out;
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
  const extraValued = (extra.valued ?? []).filter((f) => !byFlag.has(f));
  const valued = [...byFlag.keys(), ...extraValued];
  const booleans = ["--help", ...Object.keys(BOOLEAN_FLAGS), ...(extra.boolean ?? [])];
  const unknown = (flag: string) =>
    new ConfigError(
      `unknown flag ${flag} for shardguard ${command}; flags for bun test go after "--" (shardguard ${command} ` +
        `--help lists the flags)`,
    );
  for (const token of readArgv(argv, valued, booleans)) {
    if (token.kind === "end") parsed.bunArgs = token.rest;
    else if (token.kind === "positional") parsed.patterns.push(token.value);
    else if (!token.known) throw unknown(token.flag);
    else if (valued.includes(token.flag)) {
      const { flag, value } = token;
      const spec = byFlag.get(flag);
      if (spec !== undefined && parsed.values.has(spec.key))
        throw new ConfigError(
          `flag ${flag} was given ` +
            `twice${
              spec.kind === "globs" || spec.kind === "paths" || spec.kind === "names"
                ? ` (give several values once, comma-separated: ${flag} a,b)`
                : spec.kind === "resources"
                  ? ` (give several resources once, separated by ";": ${flag} 'a=GLOB;b=GLOB')`
                  : ""
            }`,
        );
      // A next argument such as "--jobs" is the next flag, not this one's value ("-x" and "--" are values).
      if (value === undefined || (!token.inline && value.startsWith("--") && value.length > 2)) {
        throw new ConfigError(`flag ${flag} needs a value (shardguard ${command} --help lists the flags)`);
      }
      if (spec === undefined && parsed.extras.has(flag)) throw new ConfigError(`flag ${flag} was given twice`);
      if (spec === undefined) parsed.extras.set(flag, value);
      else parsed.values.set(spec.key, value);
    } else if (token.flag in BOOLEAN_FLAGS) {
      if (token.inline) throw new ConfigError(`flag ${token.flag} takes no value (got ${JSON.stringify(token.arg)})`);
      parsed.booleans.add(token.flag as keyof typeof BOOLEAN_FLAGS);
    } else if (token.inline)
      throw unknown(token.flag); // --help=1, --last-failed=1
    else if (token.flag === "--help") parsed.help = true;
    else parsed.extras.set(token.flag, true);
  }
  return parsed;
}
