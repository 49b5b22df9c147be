/**
 * Resolves run settings from their sources in one place, in the precedence of docs/configuration.md, "Where
 * settings come from, and precedence"; everything is validated before planning, so a bad value spends nothing.
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { readRegularTextSync } from "../util/regular-file.ts";
import path from "node:path";
import type { ParsedArgs } from "./args.ts";
import {
  BOOLEAN_FLAGS,
  ConfigError,
  DEFAULTS,
  parseSettingValue,
  SETTINGS,
  showValue,
  type ResourceTable,
  type RunSettings,
  type SettingSpec,
  type SettingValue,
} from "./settings-schema.ts";

/** Keys of `[shardguard]` that are not plain settings. */
const TABLE_KEYS = ["patterns", "bun-args", "presets", "history", "quarantine"] as const;

/** Setting keys as in the settings table (`timeout` is the wall-clock limit, in ms once parsed). */
export type SettingKey = SettingSpec["key"];

/**
 * A source of settings besides flags, SHARDGUARD_* and bunfig.toml (a preset's knobs or values), already parsed
 * in the parsed setting's units (ms for `timeout` and `grace`).
 */
export interface SettingLayer {
  /** Where the values come from, e.g. "EVALS_JOBS" or "preset gstack-paid"; reported as the source. */
  from: string;
  values: Partial<Record<SettingKey, number | "auto" | "pass" | "fail" | string[] | ResourceTable>>;
}

/** Inputs to {@link resolveSettings}; injectable so tests need no real process state. */
export interface ResolveInputs {
  args: ParsedArgs;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Bun used when nothing names one: the runtime running shardguard. */
  defaultBun: string;
  /** Layers between the flags and SHARDGUARD_*, highest first. */
  above?: readonly SettingLayer[];
  /** Layers between `[shardguard]` and the defaults, highest first. */
  below?: readonly SettingLayer[];
}

/**
 * Resolved settings and, per setting key, the source its value came from ("--jobs", "SHARDGUARD_JOBS", "default", a
 * layer's `from`).
 */
export interface ResolvedSettings {
  settings: RunSettings;
  sources: Partial<Record<SettingKey, string>>;
}

/** The `[shardguard]` table of a bunfig.toml, or an empty object when there is none. */
export interface BunfigTable {
  table: Record<string, unknown>;
  /** Path of the bunfig.toml read, for error messages; null when absent. */
  file: string | null;
  /** `[test] root` of the same bunfig.toml: where Bun itself looks for tests; null when unset. */
  testRoot: string | null;
  /** `[test] retry` of the same bunfig.toml (a whole number); null when unset. */
  testRetry?: number | null;
  /** The file's text ("" when absent), to quote a value as written. */
  text: string;
}

/**
 * Reads `[shardguard]` from `<root>/bunfig.toml`.
 *
 * @throws ConfigError when the file exists but is not valid TOML or the table is not a table
 */
export function readBunfigTable(root: string): BunfigTable {
  const file = path.join(root, "bunfig.toml");
  if (!existsSync(file)) return { table: {}, file: null, testRoot: null, text: "" };
  let doc: Record<string, unknown>;
  let text: string;
  try {
    text = readRegularTextSync(file);
  } catch (error) {
    throw new ConfigError(`${file} cannot be read: ${(error as Error).message}; expected a regular TOML file`);
  }
  try {
    doc = Bun.TOML.parse(text) as Record<string, unknown>;
  } catch (error) {
    const first = String((error as Error).message)
      .split("\n")[0]!
      .replace(/^TOML Parse error: /, "");
    throw new ConfigError(`${tomlPosition(file, text)} is not valid TOML: ${first}`);
  }
  const testSection = doc.test as Record<string, unknown> | undefined;
  const testRoot = typeof testSection?.root === "string" && testSection.root.length > 0 ? testSection.root : null;
  const testRetry =
    Number.isInteger(testSection?.retry) && (testSection!.retry as number) >= 0 ? (testSection!.retry as number) : null;
  const table = doc.shardguard;
  if (table === undefined) return { table: {}, file, testRoot, testRetry, text };
  if (typeof table !== "object" || table === null || Array.isArray(table)) {
    throw new ConfigError(`${file}: [shardguard] must be a table`);
  }
  return { table: table as Record<string, unknown>, file, testRoot, testRetry, text };
}

/**
 * `FILE:LINE:COLUMN` of the first TOML error in `text`, or `FILE`. Bun.TOML's error names no position, so
 * smol-toml, loaded only then, parses the text again to find it.
 */
function tomlPosition(file: string, text: string): string {
  try {
    (require("smol-toml") as typeof import("smol-toml")).parse(text);
  } catch (error) {
    const { line, column } = error as { line?: unknown; column?: unknown };
    if (typeof line === "number" && typeof column === "number") return `${file}:${line}:${column}`;
  }
  return file;
}

const isTable = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The text of `key = value` in `[shardguard]` as written, or undefined when not on one line: for error lines,
 * since Bun.TOML reads `1e400` and `inf` as Infinity, which JSON prints as null.
 */
export function writtenTomlValue(text: string, key: string): string | undefined {
  let inTable = false;
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[\s*([^\]]*?)\s*\]\s*(#.*)?$/.exec(line);
    if (header) {
      inTable = header[1] === "shardguard";
      continue;
    }
    if (!inTable) continue;
    const m = /^\s*("?)([A-Za-z0-9_-]+)\1\s*=\s*([^#]*?)\s*(#.*)?$/.exec(line);
    if (m && m[2] === key && m[3]) return m[3];
  }
  return undefined;
}

function stringList(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string" && v.length > 0)) {
    throw new ConfigError(`invalid ${where} ${showValue(value)}: expected an array of non-empty strings`);
  }
  return value as string[];
}

/**
 * Merges flags, environment, bunfig.toml and defaults into {@link RunSettings}; relative paths resolve against
 * `cwd`, bunfig.toml's against its root.
 * @throws ConfigError naming the key, the value and what is accepted
 */
export function resolveSettings(inputs: ResolveInputs): RunSettings {
  return resolveSettingsWithSources(inputs).settings;
}

/**
 * The run root from `--root`, SHARDGUARD_ROOT or cwd (bunfig.toml is read from it, so cannot set it).
 * @throws ConfigError when it is not an existing, readable directory
 */
export function resolveRoot(args: ParsedArgs, env: Record<string, string | undefined>, cwd: string): string {
  const rootSpec = SETTINGS.find((s) => s.key === "root")!;
  const rootRaw = args.values.get("root") ?? nonEmpty(env[rootSpec.env]);
  const root = path.resolve(cwd, rootRaw ?? ".");
  const rootSource = args.values.has("root") ? "--root" : rootRaw !== undefined ? rootSpec.env : "current directory";
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new ConfigError(`invalid ${rootSource} ${JSON.stringify(rootRaw ?? root)}: expected an existing directory`);
  }
  try {
    accessSync(root, constants.R_OK | constants.X_OK);
  } catch {
    throw new ConfigError(`invalid ${rootSource} ${JSON.stringify(rootRaw ?? root)}: directory is not readable`);
  }
  return root;
}

/**
 * {@link resolveSettings}, also telling where each value came from; settings go in a fixed order, so the first
 * bad value is the one reported.
 * @throws ConfigError naming the key, the value and what is accepted
 */
export function resolveSettingsWithSources(inputs: ResolveInputs): ResolvedSettings {
  const { args, env, cwd } = inputs;
  // 1. The root and its bunfig.toml.
  const root = resolveRoot(args, env, cwd);
  const bunfig = readBunfigTable(root);
  checkBunfigKeys(bunfig);
  // 2. Every setting, each from its highest-precedence source.
  const r: Resolution = { inputs, root, bunfig, sources: {} };
  const out = pathSetting(r, "out", path.join(root, DEFAULTS.outDirName));
  const bun = resolveBunSetting(r);
  const { patterns, bunArgs } = listSettings(args, bunfig, root);
  const testEvents = testEventsSetting(args, env, bunfig);
  const filesPerShard = pickedValue<number | "auto">(r, "filesPerShard") ?? DEFAULTS.filesPerShard;
  const settings: RunSettings = {
    root,
    jobs: pickedValue<number>(r, "jobs") ?? DEFAULTS.jobs,
    timeoutMs: pickedValue<number>(r, "timeout") ?? DEFAULTS.timeoutSeconds * 1000,
    graceMs: pickedValue<number>(r, "grace") ?? DEFAULTS.graceSeconds * 1000,
    filesPerShard,
    out,
    junit: pathSetting(r, "junit", path.join(out, "junit.xml")),
    json: pathSetting(r, "json", path.join(out, "report.json")),
    ctrf: pathSetting(r, "ctrf", path.join(out, "ctrf.json")),
    html: pathSetting(r, "html", path.join(out, "report.html")),
    bun,
    patterns,
    bunArgs: [...bunArgs],
    testEvents,
    heartbeatMs: pickedValue<number>(r, "heartbeat") ?? DEFAULTS.heartbeatSeconds * 1000,
    redact: pickedValue<string[]>(r, "redact") ?? [],
    lock: pickedValue<string>(r, "lock") ?? null,
    annotations: (pickedValue<string>(r, "annotations") ?? "on") === "on",
    timings: pathList(r, "timings"),
    exclusive: pickedValue<string[]>(r, "exclusive") ?? [],
    resources: pickedValue<ResourceTable>(r, "resources") ?? {},
    emptyFiles: pickedValue<"pass" | "fail">(r, "emptyFiles") ?? "pass",
    updateTimings: optionalPath(r, "updateTimings"),
    budgetUsd: pickedValue<number>(r, "budgetUsd") ?? null,
    budgetKill:
      args.booleans.has("--budget-kill") ||
      ["1", "true"].includes(env.SHARDGUARD_BUDGET_KILL ?? "") ||
      bunfig.table["budget-kill"] === true,
  };
  // 3. Report paths.
  checkDistinctReports(settings);
  return { settings, sources: r.sources };
}

/** One resolution in progress: its inputs, root and bunfig.toml, and the source of each setting picked so far. */
interface Resolution {
  inputs: ResolveInputs;
  root: string;
  bunfig: BunfigTable;
  sources: Partial<Record<SettingKey, string>>;
}

/**
 * One source's value of a setting; `from` decides the base of a relative path (docs/configuration.md "Path
 * resolution").
 */
type Picked = { value: SettingValue; from: "flag" | "layer" | "env" | "toml"; source: string };

/**
 * The highest-precedence value of a setting, its source recorded (docs/configuration.md, "Where settings come
 * from, and precedence"). Every source is parsed: a bad value under a flag is the value once the flag goes.
 */
function pickSetting(r: Resolution, key: SettingKey): Picked | undefined {
  const spec = settingSpec(key);
  const found = [
    ...flagValue(spec, r.inputs.args),
    ...layerValues(spec, r.inputs.above),
    ...envValue(spec, r.inputs.env),
    ...tomlValue(spec, r.bunfig),
    ...layerValues(spec, r.inputs.below),
  ];
  const winner = found[0];
  r.sources[spec.key] = winner?.source ?? "default";
  return winner;
}

/** The spec of a setting key in the settings table. */
function settingSpec(key: SettingKey): SettingSpec {
  return SETTINGS.find((s) => s.key === key)!;
}

/** A setting's command-line flag, parsed (docs/configuration.md "Settings"). */
function flagValue(spec: SettingSpec, args: ParsedArgs): Picked[] {
  const raw = args.values.get(spec.key);
  if (raw === undefined) return [];
  return [{ value: parseSettingValue(spec, raw, spec.flag), from: "flag", source: spec.flag }];
}

/** A setting's values in preset layers, highest first; already parsed by the preset. */
function layerValues(spec: SettingSpec, layers: readonly SettingLayer[] | undefined): Picked[] {
  const found: Picked[] = [];
  for (const layer of layers ?? []) {
    const value = layer.values[spec.key];
    if (value !== undefined) found.push({ value, from: "layer", source: layer.from });
  }
  return found;
}

/** A setting's SHARDGUARD_* variable, parsed; an empty variable counts as unset. */
function envValue(spec: SettingSpec, env: Record<string, string | undefined>): Picked[] {
  const raw = nonEmpty(env[spec.env]);
  if (raw === undefined) return [];
  return [{ value: parseSettingValue(spec, raw, spec.env), from: "env", source: spec.env }];
}

/** A setting's `[shardguard]` key, parsed; a non-finite number is quoted as written in the error. */
function tomlValue(spec: SettingSpec, bunfig: BunfigTable): Picked[] {
  if (!spec.toml || !(spec.toml in bunfig.table)) return [];
  const raw = bunfig.table[spec.toml];
  const written =
    typeof raw === "number" && !Number.isFinite(raw) ? writtenTomlValue(bunfig.text, spec.toml) : undefined;
  return [
    {
      value: parseSettingValue(spec, raw, tomlWhere(bunfig, spec.toml), written),
      from: "toml",
      source: tomlWhere(bunfig, spec.toml),
    },
  ];
}

/** The picked value of a setting, or undefined when only its default applies. */
function pickedValue<T>(r: Resolution, key: SettingKey): T | undefined {
  return pickSetting(r, key)?.value as T | undefined;
}

/**
 * A picked path, resolved against the root when it came from bunfig.toml and
 * against `cwd` otherwise (docs/configuration.md "Path resolution"); null when unset.
 */
function optionalPath(r: Resolution, key: SettingKey): string | null {
  const picked = pickSetting(r, key);
  return picked ? path.resolve(pathBase(r, picked), picked.value as string) : null;
}

/** {@link optionalPath}, or `fallback` when unset. */
function pathSetting(r: Resolution, key: SettingKey, fallback: string): string {
  return optionalPath(r, key) ?? fallback;
}

/** A picked list of paths, each resolved as {@link optionalPath} does; empty when unset. */
function pathList(r: Resolution, key: SettingKey): string[] {
  const picked = pickSetting(r, key);
  return picked ? (picked.value as string[]).map((p) => path.resolve(pathBase(r, picked), p)) : [];
}

/** The directory a relative path of `picked` is resolved against (docs/configuration.md "Path resolution"). */
function pathBase(r: Resolution, picked: Picked): string {
  return picked.from === "toml" ? r.root : r.inputs.cwd;
}

/** Where a `[shardguard]` key is, for error lines and sources: "bunfig.toml [shardguard] KEY". */
function tomlWhere(bunfig: BunfigTable, key: string): string {
  return `${bunfig.file ? path.basename(bunfig.file) : "bunfig.toml"} [shardguard] ${key}`;
}

/** Every `[shardguard]` key must be known and `presets` a table of tables (docs/configuration.md, "Validation"). */
function checkBunfigKeys(bunfig: BunfigTable): void {
  const known = new Set<string>([
    ...SETTINGS.flatMap((s) => (s.toml ? [s.toml] : [])),
    ...Object.values(BOOLEAN_FLAGS).map((b) => b.toml),
    ...TABLE_KEYS,
  ]);
  for (const key of Object.keys(bunfig.table)) {
    if (!known.has(key)) {
      throw new ConfigError(`unknown key ${tomlWhere(bunfig, key)}; accepted keys: ${[...known].sort().join(", ")}`);
    }
  }
  if ("presets" in bunfig.table) {
    const presets = bunfig.table.presets;
    if (!isTable(presets) || !Object.values(presets).every(isTable)) {
      throw new ConfigError(
        `invalid ${tomlWhere(bunfig, "presets")} ${showValue(presets)}: expected a table of ` +
          `[shardguard.presets.NAME] tables`,
      );
    }
  }
}

/** The Bun the shards run: the picked one (a bare name on PATH) or the running Bun; an executable file. */
function resolveBunSetting(r: Resolution): string {
  const { inputs, bunfig } = r;
  const bunPicked = pickSetting(r, "bun");
  const bun = bunPicked
    ? resolveExecutable(bunPicked.value as string, pathBase(r, bunPicked), inputs.env)
    : inputs.defaultBun;
  const bunSource = !bunPicked
    ? "the running Bun"
    : bunPicked.from === "flag"
      ? settingSpec("bun").flag
      : bunPicked.from === "env"
        ? settingSpec("bun").env
        : tomlWhere(bunfig, "bun");
  checkExecutable(bun, bunSource);
  return bun;
}

/**
 * Patterns and `bun test` flags: the command line's, else bunfig's, else Bun's `[test] root` (docs/configuration.md,
 * "Patterns"); bunfig's lists are checked even when overridden.
 */
function listSettings(args: ParsedArgs, bunfig: BunfigTable, root: string): { patterns: string[]; bunArgs: string[] } {
  const tomlPatterns =
    "patterns" in bunfig.table ? stringList(bunfig.table.patterns, tomlWhere(bunfig, "patterns")) : undefined;
  const tomlBunArgs =
    "bun-args" in bunfig.table ? stringList(bunfig.table["bun-args"], tomlWhere(bunfig, "bun-args")) : undefined;
  const patterns =
    args.patterns.length > 0
      ? args.patterns
      : (tomlPatterns ?? (bunfig.testRoot && existsSync(path.resolve(root, bunfig.testRoot)) ? [bunfig.testRoot] : []));
  const bunArgs = args.bunArgs.length > 0 ? args.bunArgs : (tomlBunArgs ?? []);
  return { patterns, bunArgs };
}

/**
 * Whether shards report test events: `--no-test-events` > SHARDGUARD_NO_TEST_EVENTS
 * (1, 0, true, false) > `test-events` (a boolean) > on (docs/configuration.md "`--no-test-events`").
 */
function testEventsSetting(args: ParsedArgs, env: Record<string, string | undefined>, bunfig: BunfigTable): boolean {
  const eventsToml = bunfig.table["test-events"];
  if (eventsToml !== undefined && typeof eventsToml !== "boolean") {
    throw new ConfigError(
      `invalid ${tomlWhere(bunfig, "test-events")} ${showValue(eventsToml)}: expected true or false`,
    );
  }
  const noEventsEnv = nonEmpty(env[BOOLEAN_FLAGS["--no-test-events"].env]);
  if (noEventsEnv !== undefined && !["0", "1", "true", "false"].includes(noEventsEnv)) {
    throw new ConfigError(
      `invalid ${BOOLEAN_FLAGS["--no-test-events"].env} ${JSON.stringify(noEventsEnv)}: expected 1, 0, true or false`,
    );
  }
  return args.booleans.has("--no-test-events")
    ? false
    : noEventsEnv !== undefined
      ? !(noEventsEnv === "1" || noEventsEnv === "true")
      : ((eventsToml as boolean | undefined) ?? true);
}

/** Each report needs its own path: two reports on one path would silently overwrite each other. */
function checkDistinctReports(settings: RunSettings): void {
  const reports = [
    ["--junit", settings.junit],
    ["--json", settings.json],
    ["--ctrf", settings.ctrf],
    ["--html", settings.html],
  ] as const;
  for (let i = 0; i < reports.length; i++) {
    for (let j = i + 1; j < reports.length; j++) {
      if (reports[i]![1] === reports[j]![1]) {
        throw new ConfigError(
          `invalid ${reports[j]![0]} ${JSON.stringify(reports[j]![1])}: it is also the ${reports[i]![0]} path; each ` +
            `report needs its own file`,
        );
      }
    }
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** A bare command name ("bun") is looked up on PATH (Bun.which); anything with a slash is a path. */
function resolveExecutable(value: string, base: string, env: Record<string, string | undefined>): string {
  if (value.includes("/")) return path.resolve(base, value);
  return Bun.which(value, { PATH: env.PATH ?? "" }) ?? value;
}

function checkExecutable(file: string, source: string): void {
  try {
    accessSync(file, constants.X_OK);
    if (!statSync(file).isFile()) throw new Error("not a file");
  } catch {
    throw new ConfigError(`invalid ${source} ${JSON.stringify(file)}: expected an executable Bun binary`);
  }
}
