/**
 * Interception of `bun test` by the preset preload: read the real command line, decide whether shardguard takes
 * the run over (docs/presets.md, "Interception: when the preload takes over"), and if so run it. Only light
 * modules load up front: plain `bun test` and every shard child pay for one small file.
 */
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { readRegularTextSync } from "../util/regular-file.ts";
import path from "node:path";
import { SHARD_ENV } from "../exec/bun-command.ts";
import { BUILTIN_PRESETS } from "./builtin.ts";
import { splitBunTestArgs, VALUE_FLAGS, type CommandFlag } from "./flags.ts";

/** Environment variable that turns interception off ("0", "false", "off"). */
export const INTERCEPT_ENV = "SHARDGUARD_INTERCEPT";

/**
 * The command line of process `pid`: `/proc/<pid>/cmdline` on Linux (exact), `ps -o args=` on macOS (split on
 * whitespace).
 * @returns null on other platforms or when it cannot be read
 */
export function readCommandLine(pid: number, platform: NodeJS.Platform = process.platform): string[] | null {
  try {
    if (platform === "linux") {
      const raw = readRegularTextSync(`/proc/${pid}/cmdline`);
      const parts = raw.split("\0");
      if (parts.at(-1) === "") parts.pop();
      return parts.length > 0 ? parts : null;
    }
    if (platform === "darwin") {
      const r = spawnSync("ps", ["-o", "args=", "-p", String(pid)], { encoding: "utf8", timeout: 5_000 });
      const line = r.status === 0 ? r.stdout.trim() : "";
      return line ? line.split(/\s+/) : null;
    }
  } catch {
    return null;
  }
  return null;
}

/** A `bun test` command line as the preload sees it. */
export interface BunTestCommand {
  /** Flags after `test`, canonical names (see flags.ts). */
  flags: CommandFlag[];
  positionals: string[];
  /** `--preset` value; "" when the flag has no value; null when absent. */
  preset: string | null;
  tier: string | null;
  /** True when the tier was written as two tokens (`--tier gate`): Bun then read the value as a path filter. */
  tierSplit: boolean;
  parallel: boolean;
  /** Bun's internal flag of a `--parallel` worker process. */
  testWorker: boolean;
  /** `--preset` or `--tier` when it was given more than once (refused, as by `shardguard run`); else null. */
  repeated: string | null;
}

/** Finds `test` after the executable and its global flags and splits what follows; null if not `bun … test …`. */
export function parseBunTestCommand(argv: readonly string[]): BunTestCommand | null {
  let at = -1;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "test") {
      at = i;
      break;
    }
    if (!arg.startsWith("-")) return null;
    if (!arg.includes("=") && VALUE_FLAGS.has(arg)) i++;
  }
  if (at < 0) return null;
  const split = splitBunTestArgs(argv.slice(at + 1), ["--preset", "--tier"]);
  const last = (name: string) => split.flags.filter((f) => f.name === name).at(-1);
  const preset = last("--preset");
  const tier = last("--tier");
  return {
    flags: split.flags.filter((f) => f.name !== "--preset" && f.name !== "--tier"),
    positionals: split.positionals,
    preset: preset ? (preset.value ?? "") : null,
    tier: tier ? (tier.value ?? "") : null,
    tierSplit: tier !== undefined && tier.tokens.length === 2,
    parallel: split.flags.some((f) => f.name === "--parallel"),
    testWorker: split.flags.some((f) => f.name === "--test-worker"),
    repeated: ["--preset", "--tier"].find((name) => split.flags.filter((f) => f.name === name).length > 1) ?? null,
  };
}

/** What the preload does with one `bun test` process. */
export type Interception =
  | { action: "none"; why: string }
  | { action: "refuse"; message: string }
  | {
      action: "take-over";
      preset: string;
      /** "--preset", or the legacy description. */
      via: string;
      /** Files named on the command line (root-relative); empty = all of the preset's. */
      files: string[];
      tier: string | null;
      /** Whether the preset's default tier applies when `tier` is null (false for `bun test FILE...`). */
      tierDefault: boolean;
      /** True when the line wrote `--tier NAME` as two tokens (see BunTestCommand.tierSplit). */
      tierSplit: boolean;
      flags: CommandFlag[];
    };

/** Inputs of {@link decideInterception}; injectable for tests. */
export interface DecideInputs {
  argv: readonly string[] | null;
  env: Record<string, string | undefined>;
  cwd: string;
  /** The parent's command line (only read in `--parallel` workers). */
  parentArgv: () => readonly string[] | null;
}

/** Positionals that are existing files, as cwd-relative paths inside cwd; null when any is not. */
function fileArguments(cwd: string, positionals: readonly string[]): string[] | null {
  const files: string[] = [];
  for (const p of positionals) {
    const abs = path.resolve(cwd, p);
    const rel = path.relative(cwd, abs);
    if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return null;
    try {
      if (!statSync(abs).isFile()) return null;
    } catch {
      return null;
    }
    files.push(rel.split(path.sep).join("/"));
  }
  return files;
}

/**
 * Presets whose unvalidated globs match every file: a cheap first pass, so `bun test some.test.ts` does not load
 * the validating modules. User presets (bunfig.toml order), then built-ins.
 */
function quickCandidates(
  cwd: string,
  files: readonly string[],
  globMatcher: (globs: readonly string[]) => (file: string) => boolean,
): string[] {
  let user: Record<string, Record<string, unknown>> = {};
  try {
    const doc = Bun.TOML.parse(readRegularTextSync(path.join(cwd, "bunfig.toml"))) as Record<string, unknown>;
    const presets = (doc.shardguard as Record<string, unknown> | undefined)?.presets;
    if (presets && typeof presets === "object") user = presets as Record<string, Record<string, unknown>>;
  } catch {
    // Missing or broken: the full check below reports a broken file when it matters.
  }
  const field = (name: string, key: string, seen: string[] = []): unknown => {
    const own = user[name];
    if (own && typeof own === "object" && key in own) return own[key];
    const parent = own && typeof own.extends === "string" ? own.extends : null;
    if (parent && parent !== name && !seen.includes(parent)) return field(parent, key, [...seen, name]);
    return BUILTIN_PRESETS[name]?.[key];
  };
  const names = [...new Set([...Object.keys(user), ...Object.keys(BUILTIN_PRESETS)])];
  return names.filter((name) => {
    if (field(name, "intercept-files") === false) return false;
    const globs = field(name, "globs");
    // Unreadable globs go to the full check, which reports them.
    if (!Array.isArray(globs) || !globs.every((g) => typeof g === "string")) return true;
    const matches = globMatcher(globs as string[]);
    return files.every(matches);
  });
}

/** The preset whose files include every file argument (user presets first; `intercept-files = false` never). */
async function legacyMatch(
  cwd: string,
  positionals: readonly string[],
  env: Record<string, string | undefined> = {},
): Promise<{ preset: string; files: string[]; startedBy: string | null; unset: string | null } | null> {
  if (positionals.length === 0) return null;
  const files = fileArguments(cwd, positionals);
  if (!files) return null;
  // The plan's glob dialect (util/glob-match.ts), loaded only when files were named.
  const { globMatcher } = await import("../util/glob-match.ts");
  const candidates = quickCandidates(cwd, files, globMatcher);
  if (candidates.length === 0) return null;
  const { loadPresets, presetFiles } = await import("./resolve.ts");
  const catalog = loadPresets(cwd);
  for (const name of candidates) {
    const preset = catalog.presets.get(name);
    if (!preset?.interceptFiles) continue;
    const own = new Set(presetFiles(preset, cwd));
    if (!files.every((f) => own.has(f))) continue;
    // A variable only a sharded runner sets for its shards: this process is one of them, so no nesting.
    const marker = [preset.selection?.selectionEnv, preset.preflight?.okEnv].find((v) => v && nonEmpty(env[v]));
    // The preset's environment (gstack: EVALS=1) is what turned these files on: a line
    // without it ran them switched off, and a take-over would switch them on.
    const unset = Object.entries(preset.env).find(([name, value]) => env[name] !== value);
    return { preset: preset.name, files, startedBy: marker ?? null, unset: unset ? `${unset[0]}=${unset[1]}` : null };
  }
  return null;
}

function nonEmpty(value: string | undefined): boolean {
  return value !== undefined && value !== "";
}

/** The `--parallel` refusal, naming the preset's jobs variable when it has one. */
async function parallelMessage(cwd: string, name: string): Promise<string> {
  let knob = "";
  try {
    const { loadPresets } = await import("./resolve.ts");
    const jobs = loadPresets(cwd).presets.get(name)?.knobs.jobs;
    if (jobs) knob = ` (${jobs} sets how many)`;
  } catch {
    // The message stays useful without the variable's name.
  }
  return (
    `bun test --parallel cannot run preset ${name}: shardguard runs each shard in its own process and manages ` +
    `that pool itself${knob}; drop --parallel`
  );
}

/**
 * Decides what the preload does; reads bunfig.toml only for a preset or file arguments.
 * @throws ConfigError when bunfig.toml's presets are invalid and are needed to decide
 */
export async function decideInterception(inputs: DecideInputs): Promise<Interception> {
  const { env, cwd } = inputs;
  if (env[SHARD_ENV.inShard] === "1") return { action: "none", why: "inside a shard child" };
  if (["0", "false", "off"].includes((env[INTERCEPT_ENV] ?? "").toLowerCase())) {
    return { action: "none", why: `${INTERCEPT_ENV} turns interception off` };
  }
  if (!inputs.argv) return { action: "none", why: "the command line cannot be read on this platform" };
  const own = parseBunTestCommand(inputs.argv);
  if (!own) return { action: "none", why: "not a bun test command line" };

  if (own.testWorker) {
    // Bun's --parallel worker: the user's command line is the parent's.
    const parentArgv = inputs.parentArgv();
    const parent = parentArgv ? parseBunTestCommand(parentArgv) : null;
    if (!parent) return { action: "none", why: "a --parallel worker" };
    const legacy = parent.preset ? null : await legacyMatch(cwd, parent.positionals, env);
    const name = parent.preset || (legacy?.unset === null ? legacy.preset : null);
    return name
      ? { action: "refuse", message: await parallelMessage(cwd, name) }
      : { action: "none", why: "a --parallel worker" };
  }

  // Two values for one of our flags: which one was meant is not ours to guess (config/args.ts refuses the same).
  const repeated =
    own.repeated === null
      ? null
      : ({ action: "refuse", message: `bun test: flag ${own.repeated} was given twice; give it once` } as const);
  if (own.preset !== null) {
    if (repeated) return repeated;
    if (own.preset === "")
      return { action: "refuse", message: "bun test --preset needs a preset name, e.g. --preset gstack-paid" };
    if (own.parallel) return { action: "refuse", message: await parallelMessage(cwd, own.preset) };
    return {
      action: "take-over",
      preset: own.preset,
      via: "--preset",
      files: own.positionals,
      tier: own.tier,
      tierDefault: true,
      tierSplit: own.tierSplit,
      flags: own.flags,
    };
  }
  const legacy = await legacyMatch(cwd, own.positionals, env);
  if (!legacy) return { action: "none", why: "no preset and no preset files on the command line" };
  if (legacy.startedBy !== null) {
    return { action: "none", why: `started as a shard by another sharded runner (${legacy.startedBy} is set)` };
  }
  if (legacy.unset !== null) {
    return {
      action: "none",
      why:
        `preset ${legacy.preset}'s ${legacy.unset} is not in the environment: its files run as plain bun test ` +
        `runs them`,
    };
  }
  if (repeated) return repeated;
  if (own.parallel) return { action: "refuse", message: await parallelMessage(cwd, legacy.preset) };
  return {
    action: "take-over",
    preset: legacy.preset,
    via: `${legacy.files.length} of its files on the bun test command line`,
    files: legacy.files,
    tier: own.tier,
    tierDefault: false,
    tierSplit: own.tierSplit,
    flags: own.flags,
  };
}
