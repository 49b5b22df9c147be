/** Preset runs, the application side: presets/ decides what to run; this runs it as `shardguard run` does. */
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import type { ParsedWithExtras } from "../config/args.ts";
import { ConfigError } from "../config/settings-schema.ts";
import { startProcess } from "../exec/process.ts";
import type { PlannedShard } from "../plan/plan.ts";
import { unmatchedGlobNotes } from "../plan/resources.ts";
import { isolateEnv, isolates } from "../exec/bun-command.ts";
import { slicePlan, type SliceSpec } from "../plan/slice.ts";
import { readTimings } from "../plan/timings.ts";
import type { PreflightPlan } from "../presets/preset-preflight.ts";
import { baseFromModule, shardDirName } from "../presets/shard-dir.ts";
import {
  preparePresetRun,
  presetHeaderLines,
  presetPlanLines,
  presetRequestFromArgs,
  type PreparedPresetRun,
  type PresetRequest,
} from "../presets/session.ts";
import { logTail, plural, type ConsoleOut } from "../report/console.ts";
import { EXIT } from "../results/codes.ts";
import { executeRun, redactingOutput } from "../engine/execute.ts";
import { removeStaleReports } from "../engine/refused.ts";
import type { Host } from "../engine/host.ts";
import { lastFailedFiles, lastReport, refusePatterns } from "./last-failed.ts";
import { preflight } from "./preflight-checks.ts";
import type { RunInputs } from "../engine/run.ts";
import { sliceHeader, sliceProvenance } from "./slice-run.ts";

/**
 * `shardguard run|list --preset NAME [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]`.
 * @throws ConfigError for any usage or configuration error (nothing started)
 */
export async function presetCommand(
  command: "run" | "list",
  args: ParsedWithExtras,
  host: Host,
  slice: SliceSpec | null = null,
  lastFailed = false,
): Promise<number> {
  const request = presetRequestFromArgs(args, host.cwd, host.env);
  if (lastFailed) return lastFailedPreset(command, request, host);
  return runPreparedPreset(command, await preparePresetRun(request), host, slice);
}

/**
 * `run|list --preset NAME --last-failed`: the newest run's failed files, whole (no diff selection), with the
 * preset's settings; a file no longer the preset's in this tier is not rerun (a warning names it).
 * @throws ConfigError as {@link preparePresetRun}, and when there is no earlier report
 */
async function lastFailedPreset(command: "run" | "list", request: PresetRequest, host: Host): Promise<number> {
  refusePatterns(request.patterns ?? []);
  let whole: PreparedPresetRun;
  ({ whole, request } = await lastFailedScope(request));
  const allowed = new Set(whole.plan.included.keys());
  const tierWord = whole.tier ? ` in tier ${whole.tier.name}` : "";
  const found = lastFailedFiles(whole.settings, request.patterns ?? [], (f) =>
    allowed.has(f) ? null : `is not one of preset ${whole.preset.name}'s files${tierWord}`,
  );
  if (found.kind === "nothing") {
    host.stdout(`shardguard: ${found.message}`);
    return EXIT.ok;
  }
  for (const f of found.gone) host.stderr(`shardguard: warning: --last-failed: ${f}; not rerun`);
  host.stdout(
    `shardguard: --last-failed: rerunning ${plural(found.files.length, "file")} of run ${found.rerunOf.runId} ` +
      `(${found.from})`,
  );
  const prepared = await preparePresetRun({ ...request, files: found.files, selectionOff: LAST_FAILED_SELECTION_OFF });
  const reason = `did not pass in run ${found.rerunOf.runId}`;
  for (const f of prepared.plan.included.keys()) prepared.plan.included.set(f, reason);
  if (command === "list") {
    for (const line of presetPlanLines(prepared)) host.stdout(line);
    return EXIT.ok;
  }
  return executePresetRun(prepared, host, { rerunOf: found.rerunOf });
}

/** Why a `--last-failed` rerun of a preset has no diff selection. */
const LAST_FAILED_SELECTION_OFF = "--last-failed reruns whole files";

/**
 * What a `--preset --last-failed` rerun may rerun: the whole plan in the tier asked for, else the rerun run's tier
 * (its failures may be periodic files). Shared with `bg`, which sizes its cap from it.
 *
 * @returns the prepared whole plan and the request with that tier
 * @throws ConfigError as {@link preparePresetRun}
 */
export async function lastFailedScope(
  request: PresetRequest,
): Promise<{ whole: PreparedPresetRun; request: PresetRequest }> {
  let whole = await preparePresetRun({ ...request, selectionOff: LAST_FAILED_SELECTION_OFF });
  const last = lastReport(whole.settings.out)?.report;
  if (
    whole.tier?.from === "default" &&
    last?.preset?.name === whole.preset.name &&
    last.preset.tier &&
    last.preset.tier !== whole.tier.name
  ) {
    request = {
      ...request,
      defaultTier: { name: last.preset.tier, from: `run ${last.runId}, which --last-failed reruns` },
    };
    whole = await preparePresetRun({ ...request, selectionOff: LAST_FAILED_SELECTION_OFF });
  }
  return { whole, request };
}

/**
 * Lists or runs a prepared preset run, or one slice of it (`--shard I/N`): its shards and its share of the
 * skipped-by-diff ones, so every machine slices the same plan.
 * @throws ConfigError before a shard starts
 */
export async function runPreparedPreset(
  command: "run" | "list",
  prepared: PreparedPresetRun,
  host: Host,
  slice: SliceSpec | null,
): Promise<number> {
  for (const note of unmatchedGlobNotes(prepared.settings.root, prepared.settings, [...prepared.plan.included.keys()]))
    host.stderr(`shardguard: ${note}`);
  if (!slice) {
    if (command === "list") {
      for (const line of presetPlanLines(prepared)) host.stdout(line);
      return EXIT.ok;
    }
    return executePresetRun(prepared, host);
  }
  // Skipped-by-diff shards included, so every machine slices the same shards.
  const sliced = slicePlan(prepared.plan, slice, readTimings(prepared.settings.timings).durations);
  const renumbered = new Map(sliced.plan.shards.map((s) => [s.files.join("\n"), s.index]));
  const skipped = prepared.skipped.flatMap((r) => {
    const index = renumbered.get(r.files.join("\n"));
    return index === undefined ? [] : [{ ...r, index }];
  });
  const mine: PreparedPresetRun = { ...prepared, plan: sliced.plan, skipped };
  host.stdout(sliceHeader(sliced, prepared.plan.shards.length));
  if (command === "list") {
    if (sliced.plan.shards.length > 0) for (const line of presetPlanLines(mine)) host.stdout(line);
    return EXIT.ok;
  }
  return executePresetRun(mine, host, sliceProvenance(sliced));
}

/**
 * Runs a prepared preset run: runner preflight, the preset's preflight when a shard is runnable, then the shards.
 *
 * @returns the run's exit code (0 all passed or skipped by diff, 1 otherwise, 130/143 cancelled)
 * @throws ConfigError (exit 2, no shard started) when nothing is runnable or a preflight fails
 */
export async function executePresetRun(
  p: PreparedPresetRun,
  host: Host,
  provenance?: RunInputs["provenance"],
): Promise<number> {
  // Before the run's first child (the shard directory's module, the preflights): see engine/run.ts.
  removeStaleReports(p.settings);
  // A run that executes nothing must never look like a pass; an empty slice reports so for the merge.
  if (p.plan.shards.length === 0 && !provenance?.slice) {
    throw new ConfigError(
      `nothing to run${p.tier ? ` in tier ${p.tier.name}` : ""}: every file of preset ${p.preset.name} is excluded ` +
        `(shardguard list --preset ${p.preset.name} shows why)`,
    );
  }
  // The project's own base for the shards' directories, before anything is spent or written.
  const shardDir =
    p.shardDir && p.shardDir.from === "preset"
      ? {
          ...p.shardDir,
          base: baseFromModule(p.shardDir.spec, p.settings.root, p.settings.bun, p.childEnv) ?? p.shardDir.base,
        }
      : p.shardDir;
  const checked = await preflight(
    p.settings,
    p.plan.shards.flatMap((s) => s.files.map((f) => path.resolve(p.settings.root, f))),
  );
  // The preflight command's log tail is printed too: redact like the run does.
  const out: ConsoleOut = { line: redactingOutput(host, p.childEnv, p.settings).stdout };
  for (const line of presetHeaderLines(p)) out.line(line);
  if (shardDir)
    out.line(
      `shardguard: shard directories: ` +
        `${shardDir.env}=${path.join(shardDir.base, "shards")}/<${
          shardDir.spec.slug === "plan" ? "shard" : "file name"
        }>`,
    );
  const env = { ...p.childEnv };
  const runnable = p.plan.shards.length - p.skipped.length;
  const pre = p.preflight;
  if (runnable > 0 && "argv" in pre) {
    await runPreflight(
      pre,
      { root: p.settings.root, out: p.settings.out, graceMs: p.settings.graceMs },
      p.childEnv,
      out,
    );
    if (pre.okEnv) env[pre.okEnv] = "1";
  }
  const result = await executeRun(
    {
      settings: p.settings,
      plan: p.plan,
      bunVersion: checked.bunVersion,
      env,
      predecided: p.skipped,
      preset: { name: p.preset.name, via: p.via, tier: p.tier?.name ?? null, selection: p.selection?.reason ?? null },
      ...(provenance ? { provenance } : {}),
      ...(shardDir && p.preset.costAdapter
        ? {
            costAdapter: {
              adapter: p.preset.costAdapter,
              dirOf: (shard: PlannedShard) => path.join(shardDir.base, "shards", shardDirName(shardDir.spec, shard)),
            },
          }
        : {}),
      ...(shardDir || isolates(p.settings.bunArgs)
        ? {
            shardEnv: (shard: PlannedShard) => ({
              ...isolateEnv(p.settings.bunArgs, shard.files.length),
              ...(shardDir
                ? { [shardDir.env]: path.join(shardDir.base, "shards", shardDirName(shardDir.spec, shard)) }
                : {}),
            }),
          }
        : {}),
    },
    host,
  );
  return result.exitCode ?? EXIT.failed;
}

/**
 * Runs the preflight supervised, logged to `OUT/preflight.log`.
 * @throws ConfigError unless it exits 0 in time
 */
export async function runPreflight(
  plan: Extract<PreflightPlan, { argv: string[] }>,
  where: { root: string; out: string; graceMs: number },
  env: Record<string, string | undefined>,
  out: ConsoleOut,
): Promise<void> {
  // Not under OUT/logs: a link to the newest run's logs, which a real directory there would freeze.
  await mkdir(where.out, { recursive: true });
  const logPath = path.join(where.out, "preflight.log");
  await rm(logPath, { force: true });
  out.line(`shardguard: preflight: ${plan.label} (timeout ${plan.timeoutMs / 1000}s) log: ${logPath}`);
  const proc = startProcess({
    argv: plan.argv,
    cwd: where.root,
    env,
    logPath,
    timeoutMs: plan.timeoutMs,
    graceMs: where.graceMs,
  });
  const outcome = await proc.done;
  if (outcome.spawnError === null && outcome.exitCode === 0 && outcome.killedBy === null) {
    out.line(`shardguard: preflight passed in ${(outcome.durationMs / 1000).toFixed(1)}s`);
    return;
  }
  const tail = await logTail(logPath);
  if (tail)
    out.line(
      tail
        .split("\n")
        .map((l) => `    | ${l}`)
        .join("\n"),
    );
  const how =
    outcome.spawnError !== null
      ? `could not start (${outcome.spawnError})`
      : outcome.killedBy === "timeout"
        ? `timed out after ${plan.timeoutMs / 1000}s`
        : outcome.exitCode !== null
          ? `exited ${outcome.exitCode}`
          : `ended by ${outcome.signal}`;
  throw new ConfigError(`preflight ${JSON.stringify(plan.label)} ${how}; no shard started (log: ${logPath})`);
}
