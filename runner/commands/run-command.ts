/** `shardguard run` and `list` without a preset: settings, plan, preflight, then the run or the printed plan. */
import path from "node:path";
import type { ParsedWithExtras } from "../config/args.ts";
import { resolveSettings } from "../config/load.ts";
import { ConfigError, type RunSettings } from "../config/settings-schema.ts";
import { isolateEnv, isolates } from "../exec/bun-command.ts";
import { planRun, type Plan, type PlannedShard } from "../plan/plan.ts";
import { parseSliceSpec, slicePlan, type SliceSpec } from "../plan/slice.ts";
import { needsTag, resourcePlan, unmatchedGlobNotes } from "../plan/resources.ts";
import { readTimings, readTimingsFile } from "../plan/timings.ts";
import { oneLine, secs } from "../util/format.ts";
import { plural } from "../report/console.ts";
import { EXIT } from "../results/codes.ts";
import { refuseRunFlagsAfterDash } from "./bun-plan-flags.ts";
import { planLastFailed } from "./last-failed.ts";
import { presetCommand } from "./preset-run.ts";
import { sliceHeader, sliceProvenance } from "./slice-run.ts";
import type { RunInputs } from "../engine/run.ts";
import type { Host } from "../engine/host.ts";
import { preflight } from "./preflight-checks.ts";
import { plannedMakespan } from "../engine/run-resources.ts";
import { removeStaleReports } from "../engine/refused.ts";
import { readBunfigTable } from "../config/load.ts";
import { resolveHistorySettings } from "../config/history-settings.ts";
import { batchDurations, executeWithHistory } from "./history-run.ts";

/**
 * Runs or lists what `args` asks for; `--preset` goes to {@link presetCommand}.
 * @returns the exit code (0, 1, 130 or 143; docs/reports.md)
 * @throws ConfigError (exit 2) for any usage or configuration error, before any child starts
 */
export async function runCommand(command: "run" | "list", args: ParsedWithExtras, host: Host): Promise<number> {
  const { spec, lastFailed } = planFlags(args, host.env);
  if (args.extras.has("--preset")) return await presetCommand(command, args, host, spec, lastFailed);
  const settings = resolveSettings({ args, env: host.env, cwd: host.cwd, defaultBun: process.execPath });
  const historySettings = resolveHistorySettings(args, host.env, {
    cwd: host.cwd,
    root: settings.root,
    out: settings.out,
    bunfig: readBunfigTable(settings.root),
  });
  // Malformed timings are exit 2 before anything runs; a missing file is a suite's first run.
  const timings = readTimings(settings.timings);
  if (settings.updateTimings) readTimingsFile(settings.updateTimings, "--update-timings");
  let plan: Plan;
  let provenance: RunInputs["provenance"] = {};
  if (lastFailed) {
    const rerun = planLastFailed(settings, args.patterns);
    if (rerun.kind === "nothing") {
      host.stdout(`shardguard: ${rerun.message}`);
      return EXIT.ok;
    }
    for (const f of rerun.gone) host.stderr(`shardguard: warning: --last-failed: ${f}; not rerun`);
    host.stdout(
      `shardguard: --last-failed: rerunning ${plural(rerun.plan.included.size, "file")} of run ` +
        `${rerun.rerunOf.runId} (${rerun.from})`,
    );
    plan = rerun.plan;
    provenance = { rerunOf: rerun.rerunOf };
  } else {
    plan = planRun({
      root: settings.root,
      patterns: settings.patterns,
      filesPerShard: settings.filesPerShard,
      batching: {
        durations: await batchDurations(settings, historySettings, timings.durations),
        jobs: settings.jobs,
        isolated: isolates(settings.bunArgs),
        timeoutMs: settings.timeoutMs,
      },
      out: settings.out,
      exclusive: settings.exclusive,
    });
  }
  if (spec) {
    const sliced = slicePlan(plan, spec, timings.durations);
    provenance = sliceProvenance(sliced);
    // Every slice's log names its slice and plan hash, so a mismatch can be traced to a machine.
    host.stdout(sliceHeader(sliced, plan.shards.length));
    if (sliced.plan.shards.length === 0 && command === "list") return EXIT.ok;
    plan = sliced.plan;
  }
  for (const note of unmatchedGlobNotes(settings.root, settings, [...plan.included.keys()]))
    host.stderr(`shardguard: ${note}`);
  if (command === "list") {
    if (plan.shards.length > 0) for (const line of planLines(plan, settings, timings.durations)) host.stdout(line);
    return EXIT.ok;
  }
  for (const e of plan.excluded) host.stderr(`shardguard: warning: ${oneLine(e.file)}: ${oneLine(e.reason)}`);
  const planned = plan.shards.flatMap((s) => s.files.map((f) => path.resolve(settings.root, f)));
  // Before the run's first child (the preflight's Bun probe): see engine/run.ts.
  removeStaleReports(settings);
  const checked = await preflight(settings, planned);
  for (const file of timings.missing)
    host.stderr(`shardguard: warning: --timings ${file} does not exist; shards start in plan order`);
  // An empty slice still runs (nothing) and reports the whole plan, so the merge sees it reported.
  // Batches under --isolate (--files-per-shard auto adds it) tell the preload their size.
  const shardEnv = isolates(settings.bunArgs)
    ? { shardEnv: (shard: PlannedShard) => isolateEnv(settings.bunArgs, shard.files.length) }
    : {};
  return await executeWithHistory(
    {
      settings,
      plan,
      bunVersion: checked.bunVersion,
      env: host.env,
      timings: timings.durations,
      provenance,
      ...shardEnv,
    },
    historySettings,
    host,
  );
}

/**
 * The flags that change what a run plans (`--shard`, `--last-failed`, `--tier`), shared by run, list and bg so a
 * background run refuses what a run refuses; `env` is read for `--shard auto`.
 * @throws ConfigError (exit 2) for a bad `--shard`, a combination
 *   the run cannot honour, or our own flag (or `--shard`) after "--"
 */
export function planFlags(
  args: ParsedWithExtras,
  env: Record<string, string | undefined>,
): { spec: SliceSpec | null; lastFailed: boolean } {
  refuseRunFlagsAfterDash(args.bunArgs);
  const shardFlag = args.extras.get("--shard");
  const lastFailed = args.extras.get("--last-failed") === true;
  const spec = typeof shardFlag === "string" ? parseSliceSpec(shardFlag, env) : null;
  if (!args.extras.has("--preset") && args.extras.has("--tier"))
    throw new ConfigError(`flag --tier needs --preset NAME (tiers belong to a preset)`);
  if (spec && lastFailed) throw new ConfigError(`--last-failed reruns this machine's last report; it takes no --shard`);
  return { spec, lastFailed };
}

/** Human-readable plan: shards, their files and locks, what was left out, and the predicted makespan. */
export function planLines(
  plan: Plan,
  settings: RunSettings,
  durations: ReadonlyMap<string, number> = new Map(),
): string[] {
  const resources = resourcePlan(settings);
  const lines = [
    `shardguard: ${plural(plan.shards.length, "shard")}, ${plural(plan.included.size, "file")} under ${plan.root}`,
    `  jobs ${settings.jobs}, timeout ${settings.timeoutMs / 1000}s, grace ${settings.graceMs / 1000}s, files per ` +
      `shard ${settings.filesPerShard}`,
  ];
  for (const shard of plan.shards) {
    lines.push(
      `  shard ${shard.index}/${plan.shards.length} [${shard.slug}]${needsTag(resources.needsOf(shard.files))}`,
    );
    for (const file of shard.files) lines.push(`    ${oneLine(file)}  (${plan.included.get(file) ?? "planned"})`);
  }
  const makespan = resources.active ? plannedMakespan(plan.shards, settings, durations) : null;
  if (makespan)
    lines.push(
      `  planned makespan with ${settings.jobs} jobs (recorded durations): ${secs(makespan.withLocks)}, ` +
        `${secs(makespan.without)} without exclusive and resources`,
    );
  if (plan.excluded.length > 0) {
    lines.push(`Excluded (${plan.excluded.length}):`);
    for (const e of plan.excluded) lines.push(`  - ${oneLine(e.file)}  [${oneLine(e.reason)}]`);
  }
  return lines;
}
