/** The values of a preset run and where each comes from (docs/presets.md, "Where values come from"). Pure. */
import type { SettingLayer } from "../config/load.ts";
import { ConfigError, parseSettingValue, SETTINGS, type SettingSpec } from "../config/settings-schema.ts";
import { expandFlagTemplates, mergeShardFlags, splitBunTestArgs, type CommandFlag } from "./flags.ts";
import { MAX_MS, type Preset } from "./preset-schema.ts";

/** What these rules read of a preset request (session.ts `PresetRequest`). */
export interface LineRequest {
  env: Record<string, string | undefined>;
  /** `bun test` flags from the command line, for every shard. */
  commandFlags: CommandFlag[];
  /** Where `commandFlags` came from, for messages. */
  flagsWhere: string;
  /** A taken-over `bun test FILE...` line: its own flags are the shard flags. */
  lineFlagsOnly?: boolean;
}

/** The command line's last `--timeout` and `--max-concurrency` (they become settings), and the flags passed on. */
export interface LineFlags {
  timeout: CommandFlag | undefined;
  concurrency: CommandFlag | undefined;
  passOn: CommandFlag[];
}

/** The within-shard concurrency's two inputs beside the preset's value: the knob variable and the line's budget. */
export interface ConcurrencyInputs {
  knob: string | undefined;
  fromEnv: number | undefined;
  lineBudget: number | undefined;
}

const spec = (key: SettingSpec["key"]) => SETTINGS.find((s) => s.key === key)!;

/** Parses a millisecond count from an environment variable or `bun test --timeout`. */
function parseMs(raw: string, source: string): number {
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_MS) {
    throw new ConfigError(
      `invalid ${source} ${JSON.stringify(raw)}: expected a whole number of milliseconds from 1 to ${MAX_MS}`,
    );
  }
  return n;
}

/** The value, or undefined when unset or empty (an empty variable counts as unset). */
export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** Pulls the last `--timeout` and `--max-concurrency` out of the command line's flags; the rest pass on. */
export function splitLineFlags(flags: readonly CommandFlag[]): LineFlags {
  return {
    timeout: flags.filter((f) => f.name === "--timeout").at(-1),
    concurrency: flags.filter((f) => f.name === "--max-concurrency").at(-1),
    passOn: flags.filter((f) => f.name !== "--timeout" && f.name !== "--max-concurrency"),
  };
}

/**
 * The layers above `SHARDGUARD_*` (docs/presets.md, "Where values come from").
 * @throws ConfigError for a value that is not a valid count or millisecond figure
 */
export function layersAbove(
  preset: Preset,
  req: LineRequest,
  line: LineFlags,
  tier: string | null = null,
): SettingLayer[] {
  const above: SettingLayer[] = [];
  const budgetVar = [tier === null ? undefined : preset.budgetEnv[tier], preset.budgetEnv["*"]].find(
    (v) => v !== undefined && nonEmpty(req.env[v]) !== undefined,
  );
  if (budgetVar)
    above.push({
      from: budgetVar,
      values: { budgetUsd: parseSettingValue(spec("budgetUsd"), req.env[budgetVar], budgetVar) as number },
    });
  if (line.timeout)
    above.push({
      from: `${req.flagsWhere} --timeout`,
      values: { timeout: parseMs(line.timeout.value ?? "", `${req.flagsWhere} --timeout`) },
    });
  const jobsKnob = preset.knobs.jobs;
  const jobsRaw = knob(req.env, jobsKnob);
  if (jobsKnob && jobsRaw !== undefined)
    above.push({ from: jobsKnob, values: { jobs: parseSettingValue(spec("jobs"), jobsRaw, jobsKnob) as number } });
  const timeoutKnob = preset.knobs.timeoutMs;
  const timeoutRaw = knob(req.env, timeoutKnob);
  if (timeoutKnob && timeoutRaw !== undefined)
    above.push({ from: timeoutKnob, values: { timeout: parseMs(timeoutRaw, timeoutKnob) } });
  return above;
}

/** The layer below `[shardguard]` in bunfig.toml: the preset's own values. */
export function layersBelow(preset: Preset): SettingLayer[] {
  return [
    {
      from: `preset ${preset.name}`,
      values: {
        jobs: preset.jobs,
        timeout: preset.timeoutMs,
        grace: preset.graceMs,
        filesPerShard: preset.filesPerShard,
        ...(preset.exclusive.length > 0 ? { exclusive: preset.exclusive } : {}),
        ...(Object.keys(preset.resources).length > 0 ? { resources: preset.resources } : {}),
        ...(preset.emptyFiles ? { emptyFiles: preset.emptyFiles } : {}),
        ...(preset.budgetUsd !== null ? { budgetUsd: preset.budgetUsd } : {}),
      },
    },
  ];
}

/**
 * Parses the concurrency knob variable, then the line's budget.
 * @throws ConfigError for an invalid count
 */
export function concurrencyInputs(preset: Preset, req: LineRequest, line: LineFlags): ConcurrencyInputs {
  const concKnob = preset.knobs.maxConcurrency;
  const concRaw = knob(req.env, concKnob);
  const fromEnv =
    concKnob && concRaw !== undefined ? (parseSettingValue(spec("jobs"), concRaw, concKnob) as number) : undefined;
  const lineBudget =
    line.concurrency !== undefined
      ? (parseSettingValue(spec("jobs"), line.concurrency.value ?? "", `${req.flagsWhere} --max-concurrency`) as number)
      : undefined;
  return { knob: concKnob, fromEnv, lineBudget };
}

/** Within-shard `--max-concurrency` (docs/presets.md, "Where values come from"); none for a line that set none. */
export function maxConcurrencyOf(
  preset: Preset,
  req: LineRequest,
  inputs: ConcurrencyInputs,
  jobs: number,
): { value: number; from: string } | null {
  const { fromEnv, lineBudget } = inputs;
  if (req.lineFlagsOnly && lineBudget === undefined) return null;
  if (fromEnv !== undefined) return { value: fromEnv, from: inputs.knob! };
  if (lineBudget !== undefined) {
    return {
      value: Math.ceil(lineBudget / jobs),
      from: `${req.flagsWhere} --max-concurrency ${lineBudget} shared by ${jobs} jobs`,
    };
  }
  return { value: preset.maxConcurrency, from: `preset ${preset.name}` };
}

/**
 * The shard flags (docs/presets.md, "Where values come from"): a taken-over line's own, else `shard-flags` <
 * `bun-args` < the command line's, same name replacing.
 */
export function shardFlagsOf(
  preset: Preset,
  req: LineRequest,
  line: LineFlags,
  values: { maxConcurrency: number | null; timeoutMs: number; bunArgs: readonly string[] },
): string[] {
  if (req.lineFlagsOnly) {
    const lastOf = (flag: CommandFlag, value: string | undefined): CommandFlag[] =>
      value !== undefined ? [{ name: flag.name, value, tokens: [`${flag.name}=${value}`] }] : [];
    return mergeShardFlags(
      [],
      req.commandFlags.flatMap((f) =>
        f === line.concurrency
          ? lastOf(f, values.maxConcurrency !== null ? String(values.maxConcurrency) : undefined)
          : f === line.timeout
            ? lastOf(f, String(values.timeoutMs))
            : f.name === "--timeout" || f.name === "--max-concurrency"
              ? []
              : [f],
      ),
    );
  }
  // A line's own --max-concurrency reaches every shard, as its share, even where the preset's flags name none.
  const asked: CommandFlag[] =
    line.concurrency && values.maxConcurrency !== null
      ? [{ name: "--max-concurrency", value: String(values.maxConcurrency), tokens: line.concurrency.tokens }]
      : [];
  return mergeShardFlags(
    expandFlagTemplates(preset.shardFlags, { maxConcurrency: values.maxConcurrency!, timeoutMs: values.timeoutMs }),
    [...splitBunTestArgs([...values.bunArgs]).flags, ...asked, ...line.passOn],
  );
}

function knob(env: Record<string, string | undefined>, name: string | undefined): string | undefined {
  return name ? nonEmpty(env[name]) : undefined;
}
