/**
 * A preset run from request to exit code: {@link preparePresetRun} finds every fault before any child but git
 * starts (exit 2), then {@link executePresetRun} runs the preflight and the shards.
 */
import path from "node:path";
import type { ParsedArgs, ParsedWithExtras } from "../config/args.ts";
import { resolveRoot, resolveSettingsWithSources } from "../config/load.ts";
import { ConfigError, type RunSettings } from "../config/settings-schema.ts";
import { needsTag, resourcePlan } from "../plan/resources.ts";
import { groupIntoShards, planRun, refuseOutAmongTests, type Plan } from "../plan/plan.ts";
import type { ShardResult } from "../results/report-model.ts";
import { skippedByDiff } from "../results/verdict.ts";
import { plural } from "../util/format.ts";
import {
  computeSelection,
  loadTouchfiles,
  partitionShards,
  serializeSelection,
  type DiffSelection,
  type FileDecision,
} from "./diff.ts";
import { bunFlagConflict, REFUSED_FLAGS, splitBunTestArgs, type CommandFlag } from "./flags.ts";
import { planPreflight, type PreflightPlan } from "./preset-preflight.ts";
import { readTimings } from "../plan/timings.ts";
import { getPreset, loadPresets, presetFiles } from "./resolve.ts";
import type { Preset, ShardDirSpec } from "./preset-schema.ts";
import {
  concurrencyInputs,
  layersAbove,
  layersBelow,
  maxConcurrencyOf,
  nonEmpty,
  shardFlagsOf,
  splitLineFlags,
  type LineFlags,
} from "./preset-values.ts";
import { chooseTier, filterByTier, type ChosenTier } from "./select-tier.ts";
import { isolates } from "../exec/bun-command.ts";

/** What a preset run was asked to do. */
export interface PresetRequest {
  /** Preset name. */
  name: string;
  /** How the preset was chosen, for the header line, e.g. "--preset". */
  via: string;
  cwd: string;
  env: Record<string, string | undefined>;
  /** shardguard's own flags (`shardguard run/list`); an empty parse from the preload. */
  args: ParsedArgs;
  /** `--tier` value, when given. */
  tier?: string;
  /** Whether the preset's default tier applies (default true); false for `bun test FILE...` (see chooseTier). */
  tierDefault?: boolean;
  /**
   * The tier where the preset's default would apply, and where it came from (e.g. the rerun run's tier);
   * ignored when not one of the preset's tiers.
   */
  defaultTier?: { name: string; from: string };
  /** Files (root-relative or absolute) limiting the run; each must be a file of the preset. */
  files?: string[];
  /** Globs (root-relative) limiting the run (`shardguard run --preset X PATTERN...`). */
  patterns?: string[];
  /** Turns diff selection off, with the reason the selection line shows (e.g. a `--last-failed` rerun). */
  selectionOff?: string;
  /** `bun test` flags from the command line, for every shard. */
  commandFlags: CommandFlag[];
  /**
   * True for a taken-over `bun test FILE...` line: its own flags are the shard flags, without `shard-flags` (a
   * line without `--retry` must not gain it: a failing paid test would run twice).
   */
  lineFlagsOnly?: boolean;
  /** Where `commandFlags` came from, for messages, e.g. "bun test command line". */
  flagsWhere: string;
}

/** A value and where it came from (flag, environment variable, default…). */
export interface Sourced<T> {
  value: T;
  from: string;
}

/** Everything decided before anything runs. */
export interface PreparedPresetRun {
  preset: Preset;
  via: string;
  tier: ChosenTier | null;
  settings: RunSettings;
  /** Every shard of the run, skipped-by-diff ones included. */
  plan: Plan;
  /** Results of the shards diff selection skipped (never spawned). */
  skipped: ShardResult[];
  selection: DiffSelection | null;
  /** Per-file diff decisions (empty when everything runs). */
  decisions: Map<string, FileDecision>;
  /** How many files the preset's globs matched before tiers. */
  matchedFiles: number;
  /** Null when no `--max-concurrency` is passed on (a taken-over line that set none). */
  maxConcurrency: Sourced<number> | null;
  jobs: Sourced<number>;
  timeoutMs: Sourced<number>;
  /** Environment of every child (before the preflight's ok variable). */
  childEnv: Record<string, string | undefined>;
  /**
   * The per-shard directory variable and its base, when the preset has one; a base still to be asked of the
   * spec's module (shard-dir.ts `baseFromModule`) has `from` "preset".
   */
  shardDir: { env: string; base: string; from: "environment" | "preset"; spec: ShardDirSpec } | null;
  /** The preflight check run once before the shards, or why there is none. */
  preflight: PreflightPlan;
}

/**
 * Checks command-line flags meant for shards.
 * @throws ConfigError naming the first refused flag, and why
 */
export function checkShardFlags(flags: readonly CommandFlag[], where: string): void {
  for (const flag of flags) {
    const why = REFUSED_FLAGS[flag.name];
    if (why) throw new ConfigError(`${where}: ${flag.tokens.join(" ")} cannot be used with a preset: ${why}`);
  }
}

/**
 * The request of `shardguard run|list|bg --preset NAME [PATTERN...] [-- FLAGS]` from its parsed command line.
 * @throws ConfigError when --preset has no value (files after `--`: bun-plan-flags.ts `refuseRunFlagsAfterDash`)
 */
export function presetRequestFromArgs(
  args: ParsedWithExtras,
  cwd: string,
  env: Record<string, string | undefined>,
): PresetRequest {
  const name = args.extras.get("--preset");
  const tier = args.extras.get("--tier");
  if (typeof name !== "string") throw new ConfigError("flag --preset needs a value");
  return {
    name,
    via: "--preset",
    cwd,
    env,
    args,
    ...(typeof tier === "string" ? { tier } : {}),
    patterns: args.patterns,
    commandFlags: splitBunTestArgs(args.bunArgs).flags,
    flagsWhere: `flags after "--"`,
  };
}

/**
 * Settles every value of a preset run and plans it, in the precedence of docs/presets.md, "Where values come
 * from"; starts no process but git, writes nothing.
 *
 * @throws ConfigError (exit 2) for an invalid value, an unknown preset or tier, files outside the preset, refused
 *   flags, a broken touchfiles source, or a git failure
 */
export async function preparePresetRun(req: PresetRequest): Promise<PreparedPresetRun> {
  const { env } = req;
  // 1. The root, the preset and its tier.
  const root = resolveRoot(req.args, env, req.cwd);
  const preset = getPreset(loadPresets(root), req.name, req.via === "--preset" ? "--preset" : "preset");
  const tier = runTier(preset, req);

  // 2. Command-line flags: refuse what cannot be passed on; pull out the two that become settings.
  checkShardFlags(req.commandFlags, req.flagsWhere);
  const line = splitLineFlags(req.commandFlags);

  // 3. Every value, with its source, and the shard flags.
  const { settings, jobs, timeoutMs, maxConcurrency } = settleValues(preset, req, line, tier?.name ?? null);

  // 4. Files: the preset's, limited to the ones asked for; then tiers and shards.
  const files = presetRunFiles(preset, root, req, settings.out);
  const plan = planPresetShards(preset, root, tier, settings, files);

  // 5. Diff selection, then what every child gets.
  const { selection, skipped, decisions } = await diffSelection(preset, req, root, plan.shards, settings.out);
  return {
    preset,
    via: req.via,
    tier,
    settings,
    plan,
    skipped,
    selection,
    decisions,
    matchedFiles: files.length,
    maxConcurrency,
    jobs,
    timeoutMs,
    childEnv: childEnvOf(preset, env, tier, selection),
    shardDir: shardDirOf(preset, env, root, settings.out),
    preflight: planPreflight(preset, root, settings.bun),
  };
}

/**
 * The tier (docs/presets.md, "Where values come from").
 * @throws ConfigError for an unknown tier, or `--tier` for a preset without tiers
 */
function runTier(preset: Preset, req: PresetRequest): ChosenTier | null {
  let tier: ChosenTier | null = null;
  if (preset.tier) tier = chooseTier(preset.tier, req.tier, req.env, req.tierDefault ?? true);
  else if (req.tier !== undefined)
    throw new ConfigError(`invalid --tier ${JSON.stringify(req.tier)}: preset ${preset.name} has no tiers`);
  if (tier?.from === "default" && req.defaultTier && preset.tier?.values.includes(req.defaultTier.name))
    tier = { ...req.defaultTier };
  return tier;
}

/**
 * Settles the run's values through the one precedence rule (config/load.ts) with the preset's layers.
 * @throws ConfigError for an invalid value or conflicting shard flags
 */
function settleValues(
  preset: Preset,
  req: PresetRequest,
  line: LineFlags,
  tier: string | null,
): Pick<PreparedPresetRun, "settings" | "jobs" | "timeoutMs" | "maxConcurrency"> {
  const above = layersAbove(preset, req, line, tier);
  const below = layersBelow(preset);
  const concurrency = concurrencyInputs(preset, req, line);
  const { settings: resolved, sources } = resolveSettingsWithSources({
    args: { ...req.args, bunArgs: [] },
    env: req.env,
    cwd: req.cwd,
    defaultBun: process.execPath,
    above,
    below,
  });
  const jobs: Sourced<number> = { value: resolved.jobs, from: sources.jobs ?? "default" };
  const timeoutMs: Sourced<number> = { value: resolved.timeoutMs, from: sources.timeout ?? "default" };
  const maxConcurrency = maxConcurrencyOf(preset, req, concurrency, jobs.value);
  const shardFlags = shardFlagsOf(preset, req, line, {
    maxConcurrency: maxConcurrency ? maxConcurrency.value : null,
    timeoutMs: timeoutMs.value,
    bunArgs: resolved.bunArgs,
  });
  const conflict = bunFlagConflict(splitBunTestArgs(shardFlags).flags);
  if (conflict) throw new ConfigError(`preset ${preset.name}: shard flags ${conflict}`);
  const settings: RunSettings = {
    ...resolved,
    patterns: [...preset.globs],
    bunArgs: [...shardFlags],
  };
  return { settings, jobs, timeoutMs, maxConcurrency };
}

/**
 * The preset's files, limited to those asked for (docs/presets.md, "Order of checks, and exit codes").
 * @throws ConfigError when the globs match nothing, or a file or pattern match is not the preset's
 */
function presetRunFiles(preset: Preset, root: string, req: PresetRequest, out: string): string[] {
  const all = presetFiles(preset, root);
  if (all.length === 0) {
    throw new ConfigError(
      `preset ${preset.name}: no file under ${root} matches its globs (${preset.globs.join(", ")})`,
    );
  }
  if (req.files && req.files.length > 0) {
    const allowed = new Set(all);
    const files = [...new Set(req.files.map((f) => toRootRelative(root, req.cwd, f)))];
    const stray = files.find((f) => !allowed.has(f));
    if (stray !== undefined) {
      throw new ConfigError(
        `invalid file ${JSON.stringify(stray)}: not one of preset ${preset.name}'s files (globs: ` +
          `${preset.globs.join(", ")})`,
      );
    }
    return files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
  if (req.patterns && req.patterns.length > 0) {
    const allowed = new Set(all);
    const matched = [...planRun({ root, patterns: req.patterns, filesPerShard: 1, out }).included.keys()];
    const stray = matched.find((f) => !allowed.has(f));
    if (stray !== undefined) {
      throw new ConfigError(
        `invalid pattern match ${JSON.stringify(stray)}: not one of preset ${preset.name}'s files (globs: ` +
          `${preset.globs.join(", ")})`,
      );
    }
    return all.filter((f) => matched.includes(f));
  }
  return all;
}

/** The plan: the files in the tier, grouped into shards (timings order, exclusive files alone). */
function planPresetShards(
  preset: Preset,
  root: string,
  tier: ChosenTier | null,
  settings: RunSettings,
  files: string[],
): Plan {
  refuseOutAmongTests(root, settings.out, files);
  const inTier =
    tier && preset.tier
      ? filterByTier(root, files, tier.name, preset.tier)
      : { selected: files, reasons: new Map<string, string>(), excluded: [] };
  const shards = groupIntoShards(inTier.selected, settings.filesPerShard, {
    batching: {
      durations: readTimings(settings.timings).durations,
      jobs: settings.jobs,
      isolated: isolates(settings.bunArgs),
      timeoutMs: settings.timeoutMs,
    },
    alone: resourcePlan(settings).isExclusive,
  });
  const included = new Map(
    inTier.selected.map((f) => [f, inTier.reasons.get(f) ?? `matches preset ${preset.name}`] as const),
  );
  return { root, patterns: [...preset.globs], shards, included, excluded: inTier.excluded };
}

/**
 * Diff-based selection (docs/presets.md, "Diff-based selection"): the selection and the shards it skips.
 * @throws ConfigError for a broken touchfiles source or a git failure
 */
async function diffSelection(
  preset: Preset,
  req: PresetRequest,
  root: string,
  shards: Plan["shards"],
  out: string,
): Promise<Pick<PreparedPresetRun, "selection" | "skipped" | "decisions">> {
  const none = { selection: null, skipped: [], decisions: new Map<string, FileDecision>() };
  if (!preset.selection || shards.length === 0) return none;
  const { env } = req;
  const spec = preset.selection;
  // EVALS_ALL (or a caller's reason) means no selection at all: nothing to load, nothing to diff.
  const touchfiles = env[spec.allEnv] || req.selectionOff ? null : await loadTouchfiles(root, spec);
  if (touchfiles === null) {
    const reason = req.selectionOff
      ? `run all (${req.selectionOff})`
      : env[spec.allEnv]
        ? `run all (${spec.allEnv} is set)`
        : `run all (no touchfiles module ${spec.touchfiles}: diff-based selection is off)`;
    return { ...none, selection: { selected: null, reason, total: 0 } };
  }
  const outRel = out.startsWith(root + path.sep) ? path.relative(root, out).split(path.sep).join("/") : null;
  const selection = await computeSelection({ root, env, spec, touchfiles, ignore: outRel ? [outRel] : [] });
  const parts = partitionShards(shards, selection, { root, spec, touchfiles });
  return {
    selection,
    skipped: parts.skipped.map(({ shard, reason }) => skippedByDiff(shard, reason)),
    decisions: parts.decisions,
  };
}

/** Every child's environment: the run's, the preset's `env`, the tier variable and the selection. */
function childEnvOf(
  preset: Preset,
  env: Record<string, string | undefined>,
  tier: ChosenTier | null,
  selection: DiffSelection | null,
): Record<string, string | undefined> {
  const childEnv: Record<string, string | undefined> = { ...env, ...preset.env };
  if (tier && preset.tier) childEnv[preset.tier.env] = tier.name;
  if (selection && preset.selection) childEnv[preset.selection.selectionEnv] = serializeSelection(selection);
  return childEnv;
}

/** The per-shard directory variable and its base: the variable when set, else the preset's base. */
function shardDirOf(
  preset: Preset,
  env: Record<string, string | undefined>,
  root: string,
  out: string,
): PreparedPresetRun["shardDir"] {
  if (!preset.shardDir) return null;
  const given = nonEmpty(env[preset.shardDir.env]);
  const base = given ?? preset.shardDir.base.split("{out}").join(out).split("{root}").join(root);
  return {
    env: preset.shardDir.env,
    base: path.resolve(root, base),
    from: given !== undefined ? "environment" : "preset",
    spec: preset.shardDir,
  };
}

/** A file argument as a root-relative path with forward slashes. */
function toRootRelative(root: string, cwd: string, file: string): string {
  return path.relative(root, path.resolve(cwd, file)).split(path.sep).join("/");
}

/** The header's max-concurrency, only when the shard flags carry it: a value no shard gets is not shown. */
function concurrencyPart(p: PreparedPresetRun): string {
  if (p.maxConcurrency === null) return "no max-concurrency (the bun test line sets none), ";
  const used = splitBunTestArgs(p.settings.bunArgs).flags.some((f) => f.name === "--max-concurrency");
  return used ? `max-concurrency ${p.maxConcurrency.value} per shard (${p.maxConcurrency.from}), ` : "";
}

/** Header lines: which preset, tier, values and selection, each with its source. */
export function presetHeaderLines(p: PreparedPresetRun): string[] {
  const s = p.settings;
  const total = p.plan.shards.length;
  const lines = [
    `shardguard: preset ${p.preset.name} (${p.preset.source}, via ` +
      `${p.via})${
        p.tier
          ? `, tier ${p.tier.name} (from ${p.tier.from})`
          : p.preset.tier
            ? `, no tier (none named: ${p.preset.tier.env} not set for shards, no file left out by tier)`
            : ""
      }`,
    `shardguard: ${p.plan.included.size} of ${p.matchedFiles} files${p.tier ? ` in tier ${p.tier.name}` : ""}, ` +
      `${total} shard${total === 1 ? "" : "s"}; ` +
      `jobs ${p.jobs.value} (${p.jobs.from}), ` +
      concurrencyPart(p) +
      `timeout ${s.timeoutMs / 1000}s (${p.timeoutMs.from}), grace ${s.graceMs / 1000}s`,
  ];
  if (p.selection) {
    const counted =
      p.selection.selected === null
        ? p.selection.total > 0
          ? `${p.selection.total} of ${p.selection.total} tests`
          : "all tests"
        : `${p.selection.selected.size} of ${p.selection.total} tests`;
    lines.push(
      `shardguard: selection: ${counted} selected (${p.selection.reason}); running ${total - p.skipped.length} of ` +
        `${plural(total, "shard")}`,
    );
  }
  lines.push(`shardguard: shard flags: ${s.bunArgs.join(" ") || "(none)"}`);
  if ("none" in p.preflight) {
    if (p.preset.preflight)
      lines.push(`shardguard: preflight: none (${p.preflight.none}): each shard does its own check, if any`);
  } else {
    lines.push(
      `shardguard: preflight: ${p.preflight.label}, once before the ` +
        `shards${p.preflight.okEnv ? `; shards get ${p.preflight.okEnv}=1` : ""}`,
    );
  }
  if (total === 0) {
    lines.push(
      `shardguard: nothing to run${p.tier ? ` in tier ${p.tier.name}` : ""}: every file is excluded (shardguard list ` +
        `--preset ${p.preset.name} shows why)`,
    );
  }
  return lines;
}

/** The plan as `shardguard list --preset` prints it: header, shards with would-skip reasons, exclusions. */
export function presetPlanLines(p: PreparedPresetRun): string[] {
  const lines = presetHeaderLines(p);
  const changed = p.selection?.changed;
  if (changed && changed.length > 0)
    lines.push(
      `shardguard: changed files (${changed.length}, those that selected something first): ${changed.join(", ")}`,
    );
  const skip = new Map(p.skipped.map((r) => [r.index, r.reason]));
  const total = p.plan.shards.length;
  const resources = resourcePlan(p.settings);
  for (const shard of p.plan.shards) {
    const why = skip.get(shard.index);
    lines.push(
      `  shard ${shard.index}/${total} ` +
        `[${shard.slug}]${needsTag(resources.needsOf(shard.files))}${why ? `  [would skip: ${why}]` : ""}`,
    );
    for (const file of shard.files) {
      const d = p.decisions.get(file);
      lines.push(`    ${file}  (${p.plan.included.get(file) ?? "planned"}${d ? `; ${d.reason}` : ""})`);
    }
  }
  if (p.plan.excluded.length > 0) {
    lines.push(`Excluded (${p.plan.excluded.length}):`);
    for (const e of p.plan.excluded) lines.push(`  - ${e.file}  [${e.reason}]`);
  }
  return lines;
}
