/**
 * Presets as data: the zod schema of the raw kebab-case form (TOML or builtin.ts), the camelCase {@link Preset},
 * and one-line errors. Fields: docs/presets.md, "Fields". `timeout`/`grace` are seconds; `timeoutMs` ms.
 */
import { z } from "zod";
import { ConfigError, parseSettingValue, SETTINGS, showValue, type ResourceTable } from "../config/settings-schema.ts";

/** Largest accepted time: setTimeout cannot hold more than 2^31-1 ms. */
export const MAX_MS = 2 ** 31 - 1;

const name = z.string().min(1);
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
/** Placeholder for the tier name inside a tier guard pattern. */
export const TIER_PLACEHOLDER = "{tier}";

/** Builds the regular expression of one tier guard for one tier name. */
export function guardRegex(template: string, tier: string): RegExp {
  const escaped = tier.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(template.split(TIER_PLACEHOLDER).join(escaped));
}

const TierSchema = z.strictObject({
  /** Environment variable naming the tier (gstack: EVALS_TIER); children get it set to the chosen tier. */
  env: envName,
  /** Accepted tier names; anything else is a usage error (a typo must not self-skip every test and pass). */
  values: z.array(name).min(1),
  /** Tier used when neither `--tier` nor the environment variable names one. */
  default: name,
  /** `{tier}` patterns; a file is left out only when it declares another tier and not the chosen one. */
  guards: z
    .array(
      z
        .string()
        .min(1)
        .refine((t) => t.includes(TIER_PLACEHOLDER), `must contain ${TIER_PLACEHOLDER}`),
    )
    .default([]),
});

const KnobsSchema = z.strictObject({
  /** Environment variable giving the number of shard processes at once. */
  jobs: envName.optional(),
  /** Environment variable giving `--max-concurrency` inside each shard. */
  "max-concurrency": envName.optional(),
  /** Environment variable giving the shard wall-clock timeout in milliseconds. */
  "timeout-ms": envName.optional(),
});

const ShardDirSchema = z.strictObject({
  /** Environment variable each shard gets, set to `<base>/shards/<slug>`. */
  env: envName,
  /** Base when the parent environment does not set `env`; `{out}`, `{root}`; relative to the root. */
  base: z.string().min(1),
  /**
   * Project module (root-relative) whose `export` returns the base, called once per run in a Bun process when the
   * parent does not set `env` (gstack: `getProjectEvalDir`); `base` stands when the module does not exist.
   */
  module: z.string().min(1).optional(),
  /** The function export of `module`. */
  export: name.default("default"),
  /** Each shard's directory name: `plan` (its slug) or `file-stem` (its files' stems joined by "+", as gstack). */
  slug: z.enum(["plan", "file-stem"]).default("plan"),
});

const SelectionSchema = z.strictObject({
  /** Module (imported) or JSON file (read), root-relative, holding the map, the globals and extra name maps. */
  touchfiles: z.string().min(1),
  "touchfiles-export": name.default("E2E_TOUCHFILES"),
  "global-export": name.default("GLOBAL_TOUCHFILES"),
  /** Further exports whose keys are test names too (gstack: E2E_TIERS). */
  "names-exports": z.array(name).default([]),
  /** Regular expression over a root-relative path: only matching files may be skipped by diff (fail open). */
  skippable: z.string().min(1),
  /** Environment variable that, when set to anything, turns selection off (run everything). */
  "all-env": envName.default("EVALS_ALL"),
  /** Environment variable naming the git ref to diff against. */
  "base-env": envName.default("EVALS_BASE"),
  /** Refs tried in order when `base-env` is unset; the first that exists is the base. */
  "base-candidates": z.array(name).default(["origin/main", "origin/master", "main", "master"]),
  /** Base used when no candidate exists. */
  "default-base": name.default("main"),
  /** Environment variable that carries the selection, as JSON, to every child. */
  "selection-env": envName.default("EVALS_SELECTION_JSON"),
});

const PreflightSchema = z.strictObject({
  /** Command (argv, no shell) run once in the root before any shard; wins over `module`. */
  command: z.array(z.string().min(1)).min(1).optional(),
  /**
   * Module (root-relative) whose `export` is called once in its own Bun process with the children's environment;
   * a throw fails the preflight. Used without `command`; a missing module means no preflight.
   */
  module: z.string().min(1).optional(),
  /** The function export of `module` to call. */
  export: name.default("default"),
  /** Wall-clock limit of the command, seconds (read as `[shardguard] timeout` is, in convert). */
  timeout: z.unknown().optional(),
  /** Environment variable set to "1" in every child after the command passed. */
  "ok-env": envName.optional(),
});

const DispatchSchema = z.strictObject({
  /** owner/name the workflow is dispatched on (`shardguard bg --dispatch`); default: origin's. */
  repo: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, "expected owner/name")
    .optional(),
  /** Workflow file (name under .github/workflows) to dispatch; default shardguard-bg.yml. */
  workflow: z.string().min(1).optional(),
  /** workflow_dispatch inputs besides expected_sha and nonce; `{tier}` is replaced by the run's tier. */
  inputs: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, "expected an input name"), z.string()).default({}),
});

/** The raw (TOML / built-in) form of a complete preset, validated and converted. */
export const PresetSchema = z
  .strictObject({
    description: z.string().default(""),
    /** Globs relative to the root: the files this preset runs. */
    globs: z.array(z.string().min(1)).min(1),
    /** Whether `bun test FILE...` with only this preset's files is taken over (the legacy command line). */
    "intercept-files": z.boolean().default(true),
    // The run's numbers take what `[shardguard]` takes ("10" too), by its rules and messages (convert).
    "files-per-shard": z.unknown().optional(),
    jobs: z.unknown().optional(),
    /** Shard wall-clock timeout, seconds. */
    timeout: z.unknown().optional(),
    /** SIGTERM → SIGKILL delay, seconds. */
    grace: z.unknown().optional(),
    /** `--max-concurrency` inside each shard, unless a knob or the command line says otherwise. */
    "max-concurrency": z.unknown().optional(),
    /** `bun test` flags for every shard; `{max-concurrency}` and `{timeout-ms}` take the run's values. */
    "shard-flags": z.array(z.string().min(1)).default([]),
    /** Environment added to every child. */
    env: z.record(envName, z.string()).default({}),
    knobs: KnobsSchema.default({}),
    tier: TierSchema.optional(),
    "shard-dir": ShardDirSchema.optional(),
    selection: SelectionSchema.optional(),
    preflight: PreflightSchema.optional(),
    /** package.json script `shardguard init` adds; default `test:<name>`. */
    script: name.optional(),
    /** Variable carrying a background run's id to the tests, besides SHARDGUARD_RUN_ID (gstack: EVALS_RUN_ID). */
    "run-id-env": envName.optional(),
    /** Where `shardguard bg` dispatches this preset on CI (docs/background.md). */
    dispatch: DispatchSchema.optional(),
    /** Globs of files that run alone (the `exclusive` setting; checked by its rule in parsePreset). */
    exclusive: z.unknown().optional(),
    /** Named resource locks (the `resources` setting; checked by its rule in parsePreset). */
    resources: z.unknown().optional(),
    /** A file that registers no tests: "pass" or "fail" (`empty-files`; checked by its rule in parsePreset). */
    "empty-files": z.unknown().optional(),
    /** Dollars the run may spend (the `budget-usd` setting; checked by its rule in parsePreset). */
    "budget-usd": z.unknown().optional(),
    /** Reads the shards' spend from their shard directories too (docs/cost.md, "Adapters"); needs `shard-dir`. */
    "cost-adapter": z.enum(["gstack-eval"]).optional(),
    /** Variables carrying the run's budget, by tier ("*": any tier), above SHARDGUARD_BUDGET_USD (docs/cost.md). */
    "budget-env": z.record(z.string().regex(/^(\*|[A-Za-z0-9_-]+)$/, "expected a tier name or *"), envName).default({}),
  })
  .superRefine((p, ctx) => {
    if (p["cost-adapter"] && !p["shard-dir"])
      ctx.addIssue({ code: "custom", path: ["cost-adapter"], message: "reads the shard directories: set shard-dir" });
    if (p.tier) {
      if (!p.tier.values.includes(p.tier.default)) {
        ctx.addIssue({
          code: "custom",
          path: ["tier", "default"],
          message: `must be one of ${p.tier.values.join(", ")}`,
        });
      }
      p.tier.guards.forEach((g, i) => {
        try {
          guardRegex(g, p.tier!.default);
        } catch (error) {
          ctx.addIssue({
            code: "custom",
            path: ["tier", "guards", i],
            message: `not a valid regular expression (${(error as Error).message})`,
          });
        }
      });
    }
    if (p.selection) {
      try {
        new RegExp(p.selection.skippable);
      } catch (error) {
        ctx.addIssue({
          code: "custom",
          path: ["selection", "skippable"],
          message: `not a valid regular expression (${(error as Error).message})`,
        });
      }
    }
  });

type Raw = z.output<typeof PresetSchema>;

/** Tier rules of a preset. */
export interface TierSpec {
  env: string;
  values: string[];
  default: string;
  guards: string[];
}

/** Diff-based selection rules of a preset (see diff.ts). */
export interface SelectionSpec {
  touchfiles: string;
  touchfilesExport: string;
  globalExport: string;
  namesExports: string[];
  skippable: string;
  allEnv: string;
  baseEnv: string;
  baseCandidates: string[];
  defaultBase: string;
  selectionEnv: string;
}

/** Where each shard's own directory variable points (the `shard-dir` table). */
export interface ShardDirSpec {
  env: string;
  /** With `{out}` and `{root}`; relative to the root. */
  base: string;
  /** Project module whose function export returns the base, or null. */
  module: { path: string; export: string } | null;
  slug: "plan" | "file-stem";
}

/** A validated preset. Times: `timeoutMs`/`graceMs` in ms, `preflight.timeoutMs` in ms. */
export interface Preset {
  name: string;
  description: string;
  globs: string[];
  interceptFiles: boolean;
  /** Files per shard, or "auto" (plan/auto-batch.ts). */
  filesPerShard: number | "auto";
  jobs: number;
  timeoutMs: number;
  graceMs: number;
  maxConcurrency: number;
  shardFlags: string[];
  env: Record<string, string>;
  knobs: { jobs?: string; maxConcurrency?: string; timeoutMs?: string };
  tier: TierSpec | null;
  shardDir: ShardDirSpec | null;
  selection: SelectionSpec | null;
  preflight: {
    command: string[] | null;
    /** Module (root-relative) and function export to call when `command` is null. */
    module: { path: string; export: string } | null;
    timeoutMs: number;
    okEnv: string | null;
  } | null;
  script: string;
  /** Variable carrying a background run's id to the tests; null: SHARDGUARD_RUN_ID only. */
  runIdEnv: string | null;
  /** CI dispatch settings of `shardguard bg`; null when the preset names none. */
  dispatch: { repo: string | null; workflow: string | null; inputs: Record<string, string> } | null;
  /** Where the preset came from: "built-in", or its bunfig.toml table (and what it extends). */
  source: string;
  /** Globs of files that run alone; empty for none (the `exclusive` setting, below `[shardguard]`). */
  exclusive: string[];
  /** Named resource locks; empty for none (the `resources` setting, below `[shardguard]`). */
  resources: ResourceTable;
  /** How a file that registers no tests is judged (`empty-files`, below `[shardguard]`); null: the default. */
  emptyFiles: "pass" | "fail" | null;
  /** Dollars the run may spend (`budget-usd`, below `[shardguard]`, docs/cost.md); null: no budget. */
  budgetUsd: number | null;
  /** The adapter reading each shard directory's spend (docs/cost.md, "Adapters"); null: the cost file only. */
  costAdapter: "gstack-eval" | null;
  /** Variables carrying the budget: a tier's own first, then "*" (gstack's EVALS_BUDGET_HARD_CAP_*). */
  budgetEnv: Record<string, string>;
}

/**
 * A count or time of a preset by the rule of the `[shardguard]` setting `key` (times come back in ms); `fallback`
 * (seconds for times) when unset. `max-concurrency` is a count as `jobs` is.
 */
function numberSetting(
  key: "jobs" | "timeout" | "grace" | "filesPerShard",
  raw: unknown,
  fallback: number,
  where: string,
): number | string {
  const spec = SETTINGS.find((x) => x.key === key)!;
  return parseSettingValue(spec, raw === undefined ? fallback : raw, where) as number | string;
}

function convert(name: string, raw: Raw, source: string, where: string): Preset {
  const s = raw.selection;
  // The same rules, and messages, as the settings themselves (config/settings-schema.ts).
  const setting = (key: "exclusive" | "resources" | "emptyFiles" | "budgetUsd", rawKey: keyof Raw = key as keyof Raw) =>
    parseSettingValue(SETTINGS.find((x) => x.key === key)!, raw[rawKey], `${where} ${String(rawKey)}`);
  return {
    name,
    description: raw.description,
    globs: raw.globs,
    interceptFiles: raw["intercept-files"],
    filesPerShard: numberSetting("filesPerShard", raw["files-per-shard"], 1, `${where} files-per-shard`) as
      | number
      | "auto",
    jobs: numberSetting("jobs", raw.jobs, 4, `${where} jobs`) as number,
    timeoutMs: numberSetting("timeout", raw.timeout, 1800, `${where} timeout`) as number,
    graceMs: numberSetting("grace", raw.grace, 5, `${where} grace`) as number,
    maxConcurrency: numberSetting("jobs", raw["max-concurrency"], 4, `${where} max-concurrency`) as number,
    shardFlags: raw["shard-flags"],
    env: raw.env,
    knobs: {
      ...(raw.knobs.jobs ? { jobs: raw.knobs.jobs } : {}),
      ...(raw.knobs["max-concurrency"] ? { maxConcurrency: raw.knobs["max-concurrency"] } : {}),
      ...(raw.knobs["timeout-ms"] ? { timeoutMs: raw.knobs["timeout-ms"] } : {}),
    },
    tier: raw.tier ?? null,
    shardDir: raw["shard-dir"]
      ? {
          env: raw["shard-dir"].env,
          base: raw["shard-dir"].base,
          module: raw["shard-dir"].module ? { path: raw["shard-dir"].module, export: raw["shard-dir"].export } : null,
          slug: raw["shard-dir"].slug,
        }
      : null,
    selection: s
      ? {
          touchfiles: s.touchfiles,
          touchfilesExport: s["touchfiles-export"],
          globalExport: s["global-export"],
          namesExports: s["names-exports"],
          skippable: s.skippable,
          allEnv: s["all-env"],
          baseEnv: s["base-env"],
          baseCandidates: s["base-candidates"],
          defaultBase: s["default-base"],
          selectionEnv: s["selection-env"],
        }
      : null,
    preflight: raw.preflight
      ? {
          command: raw.preflight.command ?? null,
          module: raw.preflight.module ? { path: raw.preflight.module, export: raw.preflight.export } : null,
          timeoutMs: numberSetting("timeout", raw.preflight.timeout, 120, `${where} preflight.timeout`) as number,
          okEnv: raw.preflight["ok-env"] ?? null,
        }
      : null,
    script: raw.script ?? `test:${name}`,
    runIdEnv: raw["run-id-env"] ?? null,
    dispatch: raw.dispatch
      ? { repo: raw.dispatch.repo ?? null, workflow: raw.dispatch.workflow ?? null, inputs: raw.dispatch.inputs }
      : null,
    source,
    exclusive: raw.exclusive === undefined ? [] : (setting("exclusive") as string[]),
    resources: raw.resources === undefined ? {} : (setting("resources") as ResourceTable),
    emptyFiles: raw["empty-files"] === undefined ? null : (setting("emptyFiles", "empty-files") as "pass" | "fail"),
    budgetUsd: raw["budget-usd"] === undefined ? null : (setting("budgetUsd", "budget-usd") as number),
    costAdapter: raw["cost-adapter"] ?? null,
    budgetEnv: raw["budget-env"],
  };
}

/**
 * Validates a complete raw preset (built-in, or a bunfig.toml table merged over what it extends) and converts it.
 *
 * @param where how to name the table in messages, e.g. `bunfig.toml [shardguard.presets.my-paid]`
 * @param source where the preset came from, for the run's header (default: `where`)
 * @throws ConfigError with one line: the key path, the value and what is accepted
 */
export function parsePreset(name: string, raw: unknown, where: string, source = where): Preset {
  const result = PresetSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(describeIssue(result.error, raw, where));
  return convert(name, result.data, source, where);
}

/** One line for the first zod issue: `invalid <where> <key> <value>: <message>`. */
function describeIssue(error: z.ZodError, raw: unknown, where: string): string {
  // A misspelt key usually explains the other issues (e.g. a missing field), so it goes first.
  const issue = error.issues.find((i) => i.code === "unrecognized_keys") ?? error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const at = issue.path.length > 0 ? `${issue.path.join(".")}.` : "";
    const known = knownKeys(issue.path);
    return `unknown key ${where} ${at}${issue.keys.join(", ")}${known ? `; accepted keys: ${known}` : ""}`;
  }
  const key = issue.path.map(String).join(".");
  const value = valueAt(raw, issue.path);
  const shown = value === undefined ? "(missing)" : showValue(value);
  return `invalid ${where} ${key || "(table)"} ${shown}: ${acceptedBy(issue)}`;
}

/** zod's names of types, as the other messages say them. */
const TYPE_WORDS: Readonly<Record<string, string>> = {
  array: "an array",
  string: "a string",
  number: "a number",
  boolean: "true or false",
  object: "a table",
  record: "a table",
};

/** What the issue's rule accepts, worded as the settings' messages are ("expected …"); our own messages as is. */
function acceptedBy(issue: z.core.$ZodIssue): string {
  if (issue.path.length === 1 && issue.path[0] === "globs")
    return 'expected an array of globs, at least one (e.g. ["test/e2e/**/*.test.ts"])';
  switch (issue.code) {
    case "invalid_type":
      return `expected ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case "too_small":
      return issue.origin === "array"
        ? `expected at least ${issue.minimum} entr${issue.minimum === 1 ? "y" : "ies"}`
        : issue.origin === "string"
          ? "expected a non-empty string"
          : `expected at least ${issue.minimum}`;
    case "invalid_value":
      return `expected ${issue.values.map(String).join(" or ")}`;
    case "invalid_key":
      return issue.issues[0] ? acceptedBy(issue.issues[0]) : issue.message;
    default:
      return issue.message;
  }
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = raw;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** Accepted keys of the table at `path`, for "unknown key" messages. */
function knownKeys(path: readonly PropertyKey[]): string | null {
  const tables: Record<string, { shape: object }> = {
    "": PresetSchema,
    tier: TierSchema,
    knobs: KnobsSchema,
    "shard-dir": ShardDirSchema,
    selection: SelectionSchema,
    preflight: PreflightSchema,
    dispatch: DispatchSchema,
  };
  const table = tables[path.map(String).join(".")];
  return table ? Object.keys(table.shape).sort().join(", ") : null;
}
