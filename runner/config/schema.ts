/**
 * Run settings: their names, their sources and the rules each value must meet.
 *
 * One table ({@link SETTINGS}) drives the flag parser, the environment reader,
 * the bunfig.toml reader and the error messages, so a setting cannot be
 * accepted in one place and rejected in another.
 */
import { z } from "zod";

/** Final, validated settings of one run. Times are milliseconds, paths absolute. */
export interface RunSettings {
  /** Directory test files are discovered in and children run in. */
  root: string;
  /** Shard processes running at once. */
  jobs: number;
  /** Wall-clock limit per shard, ms. */
  timeoutMs: number;
  /** Delay between SIGTERM and SIGKILL of a shard's process group, ms. */
  graceMs: number;
  /**
   * Test files per shard, or "auto": batches of a useful amount of work from
   * the timings, each run with Bun's `--isolate` (plan/auto-batch.ts, docs/sharding.md).
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
   * GitHub Actions annotations and step summary (runner/report/github.ts):
   * written only when this is true and the run is under GitHub Actions
   * (`GITHUB_ACTIONS=true`). Set as `on` / `off`.
   */
  annotations: boolean;
  /** Bun timings files (absolute) whose per-file durations order the shards longest first; empty for plan order. */
  timings: string[];
  /** Bun timings file (absolute) the measured per-file durations are merged into after the run; null for none. */
  updateTimings: string | null;
}

/** How a raw setting value is parsed from a flag, environment variable or TOML value. */
type Kind = "posint" | "filesPerShard" | "seconds" | "nonnegSeconds" | "path" | "bool" | "names" | "name" | "onoff" | "paths";

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
  { key: "root", flag: "--root", env: "SHARDGUARD_ROOT", toml: null, kind: "path", help: "directory to discover tests in and run them from (default: current directory)" },
  { key: "jobs", flag: "--jobs", env: "SHARDGUARD_JOBS", toml: "jobs", kind: "posint", help: "shard processes at once (default 4)" },
  { key: "timeout", flag: "--timeout", env: "SHARDGUARD_TIMEOUT", toml: "timeout", kind: "seconds", help: "wall-clock seconds per shard before its process group is killed (default 1800)" },
  { key: "grace", flag: "--grace", env: "SHARDGUARD_GRACE", toml: "grace", kind: "nonnegSeconds", help: "seconds between SIGTERM and SIGKILL (default 5)" },
  { key: "filesPerShard", flag: "--files-per-shard", env: "SHARDGUARD_FILES_PER_SHARD", toml: "files-per-shard", kind: "filesPerShard", help: "test files per shard, i.e. per bun test process on this machine (default 1), or auto: batches of 0.5-5 s of work (at least 4 per job) sized from --timings, each file in a fresh global object (bun test --isolate), files at least that long alone; --shard I/N is another thing: a slice of the plan for one CI machine" },
  { key: "out", flag: "--out", env: "SHARDGUARD_OUT", toml: "out", kind: "path", help: "output directory (default .shardguard under root)" },
  { key: "junit", flag: "--junit", env: "SHARDGUARD_JUNIT", toml: "junit", kind: "path", help: "JUnit XML path (default OUT/junit.xml)" },
  { key: "json", flag: "--json", env: "SHARDGUARD_JSON", toml: "json", kind: "path", help: "JSON report path (default OUT/report.json)" },
  { key: "ctrf", flag: "--ctrf", env: "SHARDGUARD_CTRF", toml: "ctrf", kind: "path", help: "CTRF report path (default OUT/ctrf.json)" },
  { key: "html", flag: "--html", env: "SHARDGUARD_HTML", toml: "html", kind: "path", help: "HTML report path: one self-contained page with the shard timeline and every test (default OUT/report.html)" },
  { key: "bun", flag: "--bun", env: "SHARDGUARD_BUN", toml: "bun", kind: "path", help: "Bun executable for the shards (default: the Bun running shardguard)" },
  { key: "redact", flag: "--redact", env: "SHARDGUARD_REDACT", toml: "redact", kind: "names", help: "more variable names (comma-separated, * wildcards) whose values are redacted from reports, besides *_KEY, *_TOKEN, *SECRET*, *PASSWORD*" },
  { key: "lock", flag: "--lock", env: "SHARDGUARD_LOCK", toml: "lock", kind: "name", help: "machine-wide lock: runs with the same lock name run one at a time" },
  { key: "annotations", flag: "--annotations", env: "SHARDGUARD_ANNOTATIONS", toml: "annotations", kind: "onoff", help: "on GitHub Actions (GITHUB_ACTIONS=true): an error annotation per test that did not pass, a warning per flaky test, and a step summary; off to turn them off (default on)" },
  { key: "timings", flag: "--timings", env: "SHARDGUARD_TIMINGS", toml: "timings", kind: "paths", help: "Bun timings files (comma-separated; bun test --timings format) whose per-file durations start the longest shards first; a missing file is a warning" },
  { key: "updateTimings", flag: "--update-timings", env: "SHARDGUARD_UPDATE_TIMINGS", toml: "update-timings", kind: "path", help: "Bun timings file the measured per-file durations are merged into after the run (written atomically)" },
  { key: "heartbeat", flag: "--heartbeat", env: "SHARDGUARD_HEARTBEAT", toml: "heartbeat", kind: "seconds", help: "seconds between progress lines for a long-running shard without a TTY (default 60)" },
];

/** Boolean flags (no value). `--no-test-events` turns the inspector channel off. */
export const BOOLEAN_FLAGS = {
  "--no-test-events": { env: "SHARDGUARD_NO_TEST_EVENTS", toml: "test-events" },
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
    schema: z.coerce.number().min(0.001).max(MAX_MS / 1000).transform((s) => Math.round(s * 1000)),
    accepted: `a number of seconds from 0.001 to ${Math.floor(MAX_MS / 1000)}`,
  },
  nonnegSeconds: {
    schema: z.coerce.number().nonnegative().max(MAX_MS / 1000).transform((s) => Math.round(s * 1000)),
    accepted: `a number of seconds from 0 to ${Math.floor(MAX_MS / 1000)}`,
  },
  path: { schema: z.string().min(1), accepted: "a non-empty path" },
  paths: {
    schema: z
      .union([z.string(), z.array(z.string())])
      .transform((v) => (Array.isArray(v) ? v : v.split(",")).map((n) => n.trim()).filter((n) => n.length > 0))
      .pipe(z.array(z.string()).min(1)),
    accepted: "one or more paths separated by commas (or a TOML array of paths)",
  },
  bool: { schema: z.boolean(), accepted: "true or false" },
  names: {
    schema: z
      .union([z.string(), z.array(z.string())])
      .transform((v) => (Array.isArray(v) ? v : v.split(",")).map((n) => n.trim()).filter((n) => n.length > 0))
      .pipe(z.array(z.string().regex(/^[A-Za-z0-9_*?]+$/)).min(1)),
    accepted: "variable names separated by commas, at least one (letters, digits, _, and * or ? wildcards)",
  },
  name: { schema: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/), accepted: "a name of 1 to 100 letters, digits, '.', '_' or '-'" },
  // TOML may also say true / false.
  onoff: {
    schema: z.union([z.enum(["on", "off"]), z.boolean()]).transform((v) => (typeof v === "boolean" ? (v ? "on" : "off") : v)),
    accepted: "on or off",
  },
};

/**
 * Parses one raw value of a setting.
 *
 * @param raw a flag or environment string, or a TOML value (number, string, boolean)
 * @param written the value as the user wrote it, shown in the error instead of `raw` (TOML text)
 * @returns the parsed value: ms for time settings, a number for counts, a string for paths
 * @throws ConfigError naming the source, the value and what is accepted
 */
export function parseSettingValue(spec: SettingSpec, raw: unknown, source: string, written?: string): number | string | string[] {
  const rule = kindSchemas[spec.kind];
  // `z.coerce.number()` would read "" and booleans as 0/1; reject such inputs first.
  const looksNumeric =
    (typeof raw === "number" && Number.isFinite(raw)) ||
    (typeof raw === "string" && /^\s*[+]?(\d+(\.\d*)?|\.\d+)\s*$/.test(raw));
  const needsNumber = (spec.kind === "filesPerShard" && raw !== "auto") || spec.kind === "posint" || spec.kind === "seconds" || spec.kind === "nonnegSeconds";
  const result = needsNumber && !looksNumeric ? null : rule.schema.safeParse(raw);
  if (!result || !result.success) {
    throw new ConfigError(`invalid ${source} ${written ?? showValue(raw)}: expected ${rule.accepted}`);
  }
  return result.data as number | string | string[];
}

/**
 * A raw setting value for an error line: JSON, except the numbers JSON
 * cannot write (TOML's `inf`, `nan`, and literals such as `1e400` that
 * Bun.TOML reads as Infinity), which are spelled as TOML spells them
 * instead of JSON's `null`.
 */
export function showValue(raw: unknown): string {
  if (typeof raw === "number" && !Number.isFinite(raw)) return Number.isNaN(raw) ? "nan" : raw > 0 ? "inf" : "-inf";
  return JSON.stringify(raw) ?? String(raw);
}

/**
 * A usage or configuration error: the CLI prints its message as one line and
 * exits 2 before any child process starts (docs/reports.md).
 */
export class ConfigError extends Error {
  override name = "ConfigError";
}
