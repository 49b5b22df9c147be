/**
 * Run settings: one table ({@link SETTINGS}) drives the flag parser, the environment and bunfig.toml readers and
 * the messages, so a setting cannot be accepted in one place and rejected in another.
 */
import { z } from "zod";
import { splitGlobList } from "../util/glob-list.ts";
import { COST_BOOLEAN_FLAGS, COST_SETTINGS, type CostSettingValues, USD_KIND } from "./cost-settings.ts";

/** The glob matcher (micromatch), loaded only by a run that sets globs: a plain run's start-up never pays for it. */
import { ConfigError, showValue } from "./config-error.ts";

export { ConfigError, showValue };

const globs = () => require("../util/glob-match.ts") as typeof import("../util/glob-match.ts");

/** Final, validated settings of one run. Times are milliseconds, paths absolute. */
export interface RunSettings extends CostSettingValues {
  /** Directory test files are discovered in and children run in. */
  root: string;
  /** Shard processes running at once. */
  jobs: number;
  /** Wall-clock limit per shard, ms. */
  timeoutMs: number;
  /** Delay between SIGTERM and SIGKILL of a shard's process group, ms. */
  graceMs: number;
  /**
   * Test files per shard, or "auto": about one batch per job from the timings, its files sharing one process as in
   * plain `bun test` (plan/auto-batch.ts, docs/sharding.md).
   */
  filesPerShard: number | "auto";
  /** Directory holding junit.xml, report.json and logs/. */
  out: string;
  junit: string;
  json: string;
  /** CTRF report path. */
  ctrf: string;
  /** HTML report path (runner/report/html.ts): one self-contained page for people. */
  html: string;
  /** The Bun executable each shard runs. */
  bun: string;
  /** Globs (relative to root) selecting test files; empty means the default pattern. */
  patterns: string[];
  /** Flags passed unchanged to every `bun test` child. */
  bunArgs: string[];
  /** Whether per-test events are collected over Bun's inspector socket. */
  testEvents: boolean;
  /** Time between CI heartbeat lines for a long-running shard, ms (set in seconds). */
  heartbeatMs: number;
  /** Extra environment variable names (globs) whose values are redacted from reports. */
  redact: string[];
  /** Machine-wide lock name: runs holding the same name run one at a time; null for none. */
  lock: string | null;
  /**
   * GitHub Actions annotations and step summary (runner/report/github-render.ts):
   * written only when this is true and the run is under GitHub Actions
   * (`GITHUB_ACTIONS=true`). Set as `on` / `off`.
   */
  annotations: boolean;
  /** Bun timings files (absolute) whose per-file durations order the shards longest first; empty for plan order. */
  timings: string[];
  /** Bun timings file (absolute) the measured per-file durations are merged into after the run; null for none. */
  updateTimings: string | null;
  /** Globs (relative to root) of files that run with no other shard running; empty for none. */
  exclusive: string[];
  /** Named resources: shards holding the same one never run more than its capacity at once. */
  resources: ResourceTable;
  /**
   * A file that registers no tests: "pass" reports it as an empty file and
   * keeps plain `bun test`'s exit code; "fail" makes it a failure (docs/reports.md).
   */
  emptyFiles: "pass" | "fail";
}

/**
 * One named resource: the globs (relative to root) of the files that hold it, and how many shards may hold it at once.
 */
export interface ResourceSpec {
  files: string[];
  /** Shards holding it at once, at least 1. */
  capacity: number;
}

/** Resource name → its files and capacity (`resources` setting). */
export type ResourceTable = Record<string, ResourceSpec>;

/** A parsed setting value: ms or a count, a path or name, a list, or the resource table. */
export type SettingValue = number | string | string[] | ResourceTable;

/** How a raw setting value is parsed from a flag, environment variable or TOML value. */
type Kind =
  | "posint"
  | "filesPerShard"
  | "seconds"
  | "nonnegSeconds"
  | "usd"
  | "path"
  | "bool"
  | "names"
  | "name"
  | "onoff"
  | "paths"
  | "globs"
  | "resources"
  | "passfail";

/** One setting: its flag, environment variable, bunfig.toml key and value rule. */
export interface SettingSpec {
  key: keyof RunSettings | "timeout" | "grace" | "heartbeat";
  flag: string;
  env: string;
  /** Key in bunfig.toml's `[shardguard]` table; null when it cannot be set there. */
  toml: string | null;
  kind: Kind;
  help: string;
}

/** Every setting that may come from a flag, the environment or `[shardguard]` in bunfig.toml. */
export const SETTINGS: readonly SettingSpec[] = [
  {
    key: "root",
    flag: "--root",
    env: "SHARDGUARD_ROOT",
    toml: null,
    kind: "path",
    help: "directory to discover tests in and run them from (default: current directory)",
  },
  {
    key: "jobs",
    flag: "--jobs",
    env: "SHARDGUARD_JOBS",
    toml: "jobs",
    kind: "posint",
    help: "shard processes at once (default 4)",
  },
  {
    key: "timeout",
    flag: "--timeout",
    env: "SHARDGUARD_TIMEOUT",
    toml: "timeout",
    kind: "seconds",
    help: "wall-clock seconds per shard before its process group is killed (default 1800)",
  },
  {
    key: "grace",
    flag: "--grace",
    env: "SHARDGUARD_GRACE",
    toml: "grace",
    kind: "nonnegSeconds",
    help: "seconds between SIGTERM and SIGKILL (default 5)",
  },
  {
    key: "filesPerShard",
    flag: "--files-per-shard",
    env: "SHARDGUARD_FILES_PER_SHARD",
    toml: "files-per-shard",
    kind: "filesPerShard",
    help:
      "test files per shard, i.e. per bun test process on this machine (default 1), or auto: about one batch per " +
      "job (the total over jobs, within 0.5-30 s of work) sized from --timings, the files of a batch sharing one " +
      "process as in plain bun test (-- --isolate: a fresh global per file, 4 batches per job of 0.5-5 s), files " +
      "at least that long alone; " +
      "--shard I/N is another thing: a slice of the plan for one CI machine",
  },
  ...COST_SETTINGS,
  {
    key: "out",
    flag: "--out",
    env: "SHARDGUARD_OUT",
    toml: "out",
    kind: "path",
    help: "output directory (default .shardguard under root)",
  },
  {
    key: "junit",
    flag: "--junit",
    env: "SHARDGUARD_JUNIT",
    toml: "junit",
    kind: "path",
    help: "JUnit XML path (default OUT/junit.xml)",
  },
  {
    key: "json",
    flag: "--json",
    env: "SHARDGUARD_JSON",
    toml: "json",
    kind: "path",
    help: "JSON report path (default OUT/report.json)",
  },
  {
    key: "ctrf",
    flag: "--ctrf",
    env: "SHARDGUARD_CTRF",
    toml: "ctrf",
    kind: "path",
    help: "CTRF report path (default OUT/ctrf.json)",
  },
  {
    key: "html",
    flag: "--html",
    env: "SHARDGUARD_HTML",
    toml: "html",
    kind: "path",
    help: "HTML report path: one self-contained page with the shard timeline and every test (default OUT/report.html)",
  },
  {
    key: "bun",
    flag: "--bun",
    env: "SHARDGUARD_BUN",
    toml: "bun",
    kind: "path",
    help: "Bun executable for the shards (default: the Bun running shardguard)",
  },
  {
    key: "redact",
    flag: "--redact",
    env: "SHARDGUARD_REDACT",
    toml: "redact",
    kind: "names",
    help:
      "more variable names (comma-separated, * wildcards) whose values are redacted from reports, besides *_KEY, " +
      "*_TOKEN, *SECRET*, *PASSWORD*",
  },
  {
    key: "lock",
    flag: "--lock",
    env: "SHARDGUARD_LOCK",
    toml: "lock",
    kind: "name",
    help: "machine-wide lock: runs with the same lock name run one at a time",
  },
  {
    key: "annotations",
    flag: "--annotations",
    env: "SHARDGUARD_ANNOTATIONS",
    toml: "annotations",
    kind: "onoff",
    help:
      "on GitHub Actions (GITHUB_ACTIONS=true): an error annotation per test that did not pass, a warning per " +
      "flaky test, and a step summary; off to turn them off (default on)",
  },
  {
    key: "timings",
    flag: "--timings",
    env: "SHARDGUARD_TIMINGS",
    toml: "timings",
    kind: "paths",
    help:
      "Bun timings files (comma-separated; bun test --timings format) whose per-file durations start the longest " +
      "shards first; a missing file is a warning",
  },
  {
    key: "updateTimings",
    flag: "--update-timings",
    env: "SHARDGUARD_UPDATE_TIMINGS",
    toml: "update-timings",
    kind: "path",
    help: "Bun timings file the measured per-file durations are merged into after the run (written atomically)",
  },
  {
    key: "exclusive",
    flag: "--exclusive",
    env: "SHARDGUARD_EXCLUSIVE",
    toml: "exclusive",
    kind: "globs",
    help:
      "globs (comma-separated) of files that run alone: the pool drains, the file runs with no other shard, the " +
      "pool refills; such files are never batched and start after the others",
  },
  {
    key: "resources",
    flag: "--resources",
    env: "SHARDGUARD_RESOURCES",
    toml: "resources",
    kind: "resources",
    help:
      "named resource locks, NAME[@CAPACITY]=GLOB,GLOB;NAME=GLOB: shards holding the same resource never run " +
      "more than CAPACITY (default 1) at once; others keep running",
  },
  {
    key: "emptyFiles",
    flag: "--empty-files",
    env: "SHARDGUARD_EMPTY_FILES",
    toml: "empty-files",
    kind: "passfail",
    help:
      "a test file that registers no tests: pass (an empty file, as plain bun test exits 0 for it) or fail " +
      "(default pass)",
  },
  {
    key: "heartbeat",
    flag: "--heartbeat",
    env: "SHARDGUARD_HEARTBEAT",
    toml: "heartbeat",
    kind: "seconds",
    help: "seconds between progress lines for a long-running shard without a TTY (default 60)",
  },
];

/** Boolean flags (no value). `--no-test-events` turns the inspector channel off. */
export const BOOLEAN_FLAGS = {
  "--no-test-events": { env: "SHARDGUARD_NO_TEST_EVENTS", toml: "test-events" },
  ...COST_BOOLEAN_FLAGS,
} as const;

export const DEFAULTS = {
  jobs: 4,
  timeoutSeconds: 1800,
  graceSeconds: 5,
  filesPerShard: 1,
  heartbeatSeconds: 60,
  outDirName: ".shardguard",
} as const;

/** Largest accepted timeout: setTimeout cannot hold more than 2^31-1 ms (about 24.8 days). */
const MAX_MS = 2 ** 31 - 1;

const GLOBS_ACCEPTED = "globs separated by commas (or a TOML array of globs), each with its [ ], { } and ( ) closed";
const RESOURCES_ACCEPTED =
  'NAME[@CAPACITY]=GLOB,GLOB;NAME=GLOB (NAME of letters, digits, ".", "_", "-"; CAPACITY a whole number from 1 to ' +
  '10000), or in TOML a table NAME = ["GLOB", ...] or NAME = { files = ["GLOB", ...], capacity = N }';
const RESOURCE_NAME = /^[A-Za-z0-9._-]{1,100}$/;
const MAX_CAPACITY = 10_000;

const kindSchemas: Record<Kind, { schema: z.ZodType; accepted: string }> = {
  posint: {
    schema: z.coerce.number().int().positive().max(10_000),
    accepted: "a whole number from 1 to 10000",
  },
  filesPerShard: {
    schema: z.union([z.literal("auto"), z.coerce.number().int().positive().max(10_000)]),
    accepted: "a whole number from 1 to 10000, or auto",
  },
  seconds: {
    schema: z.coerce
      .number()
      .min(0.001)
      .max(MAX_MS / 1000)
      .transform((s) => Math.round(s * 1000)),
    accepted: `a number of seconds from 0.001 to ${Math.floor(MAX_MS / 1000)}`,
  },
  nonnegSeconds: {
    schema: z.coerce
      .number()
      .nonnegative()
      .max(MAX_MS / 1000)
      .transform((s) => Math.round(s * 1000)),
    accepted: `a number of seconds from 0 to ${Math.floor(MAX_MS / 1000)}`,
  },
  usd: USD_KIND,
  path: { schema: z.string().min(1), accepted: "a non-empty path" },
  paths: {
    schema: z
      .union([z.string(), z.array(z.string())])
      .transform((v) => (Array.isArray(v) ? v : v.split(",")).map((n) => n.trim()).filter((n) => n.length > 0))
      .pipe(z.array(z.string()).min(1)),
    accepted: "one or more paths separated by commas (or a TOML array of paths)",
  },
  bool: { schema: z.boolean(), accepted: "true or false" },
  // Parsed by parseGlobs / parseResources below (their messages name the entry at fault).
  globs: { schema: z.never(), accepted: GLOBS_ACCEPTED },
  resources: { schema: z.never(), accepted: RESOURCES_ACCEPTED },
  names: {
    schema: z
      .union([z.string(), z.array(z.string())])
      .transform((v) => (Array.isArray(v) ? v : v.split(",")).map((n) => n.trim()).filter((n) => n.length > 0))
      .pipe(z.array(z.string().regex(/^[A-Za-z0-9_*?]+$/)).min(1)),
    accepted: "variable names separated by commas, at least one (letters, digits, _, and * or ? wildcards)",
  },
  name: {
    schema: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/),
    accepted: "a name of 1 to 100 letters, digits, '.', '_' or '-'",
  },
  // TOML may also say true / false.
  onoff: {
    schema: z
      .union([z.enum(["on", "off"]), z.boolean()])
      .transform((v) => (typeof v === "boolean" ? (v ? "on" : "off") : v)),
    accepted: "on or off",
  },
  passfail: { schema: z.enum(["pass", "fail"]), accepted: "pass or fail" },
};

/**
 * Parses one raw value of a setting.
 *
 * @param raw a flag or environment string, or a TOML value (number, string, boolean)
 * @param written the value as the user wrote it, shown in the error instead of `raw` (TOML text)
 * @returns the parsed value: ms for time settings, a number for counts, a string for paths
 * @throws ConfigError naming the source, the value and what is accepted
 */
export function parseSettingValue(spec: SettingSpec, raw: unknown, source: string, written?: string): SettingValue {
  if (spec.kind === "globs") return parseGlobs(raw, source);
  if (spec.kind === "resources") return parseResources(raw, source);
  const rule = kindSchemas[spec.kind];
  // `z.coerce.number()` would read "" and booleans as 0/1; reject such inputs first.
  const looksNumeric =
    (typeof raw === "number" && Number.isFinite(raw)) ||
    (typeof raw === "string" && /^\s*[+]?(\d+(\.\d*)?|\.\d+)\s*$/.test(raw));
  const needsNumber =
    (spec.kind === "filesPerShard" && raw !== "auto") ||
    spec.kind === "posint" ||
    spec.kind === "seconds" ||
    spec.kind === "nonnegSeconds";
  const result = needsNumber && !looksNumeric ? null : rule.schema.safeParse(raw);
  if (!result?.success) {
    throw new ConfigError(`invalid ${source} ${written ?? showValue(raw)}: expected ${rule.accepted}`);
  }
  return result.data as number | string | string[];
}

/**
 * Globs of a flag, variable or TOML array, each checked for syntax.
 * @throws ConfigError naming the source and the bad glob
 */
function parseGlobs(raw: unknown, source: string): string[] {
  const list =
    typeof raw === "string"
      ? splitGlobList(raw)
      : Array.isArray(raw) && raw.every((g) => typeof g === "string")
        ? raw.map((g) => g.trim()).filter((g) => g !== "")
        : null;
  if (list === null || list.length === 0)
    throw new ConfigError(`invalid ${source} ${showValue(raw)}: expected ${GLOBS_ACCEPTED}`);
  for (const glob of list) {
    const problem = globs().globSyntaxError(glob);
    if (problem)
      throw new ConfigError(`invalid ${source} glob ${JSON.stringify(glob)}: ${problem}; expected ${GLOBS_ACCEPTED}`);
  }
  return list;
}

/**
 * The resource table from `NAME[@N]=GLOBS;…` (flag, variable) or a TOML
 * table of `NAME = [GLOBS]` / `NAME = { files = [GLOBS], capacity = N }`.
 *
 * @throws ConfigError naming the source, the resource at fault and what is accepted
 */
function parseResources(raw: unknown, source: string): ResourceTable {
  const table: ResourceTable = {};
  const bad = (where: string, value: unknown, what = RESOURCES_ACCEPTED): never => {
    throw new ConfigError(`invalid ${where} ${showValue(value)}: expected ${what}`);
  };
  const capacityOf = (where: string, value: unknown): number =>
    typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_CAPACITY
      ? value
      : bad(`${where} capacity`, value, `a whole number from 1 to ${MAX_CAPACITY}`);
  if (typeof raw === "string") {
    for (const entry of raw
      .split(";")
      .map((e) => e.trim())
      .filter((e) => e !== "")) {
      const m = /^([^=@]+?)(?:@([^=]*))?=(.*)$/.exec(entry);
      if (!m) bad(source, entry);
      const name = m![1]!.trim();
      if (!RESOURCE_NAME.test(name)) bad(`${source} resource name`, name, RESOURCES_ACCEPTED);
      if (Object.hasOwn(table, name))
        throw new ConfigError(`invalid ${source}: resource ${name} is named twice; expected each NAME once`);
      const capacity =
        m![2] === undefined ? 1 : capacityOf(`${source} ${name}`, /^\s*\d+\s*$/.test(m![2]) ? Number(m![2]) : m![2]);
      table[name] = { files: parseGlobs(m![3]!, `${source} ${name}`), capacity };
    }
    if (Object.keys(table).length === 0) bad(source, raw);
    return table;
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return bad(source, raw);
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    const where = `${source}.${name}`;
    if (!RESOURCE_NAME.test(name)) bad(`${source} resource name`, name, RESOURCES_ACCEPTED);
    if (Array.isArray(value)) table[name] = { files: parseGlobs(value, where), capacity: 1 };
    else if (
      typeof value === "object" &&
      value !== null &&
      Object.keys(value).every((k) => k === "files" || k === "capacity") &&
      "files" in value
    ) {
      const v = value as { files: unknown; capacity?: unknown };
      table[name] = {
        files: parseGlobs(v.files, `${where}.files`),
        capacity: v.capacity === undefined ? 1 : capacityOf(where, v.capacity),
      };
    } else bad(where, value, 'an array of globs, or { files = ["GLOB", ...], capacity = N } (no other keys)');
  }
  return table;
}
