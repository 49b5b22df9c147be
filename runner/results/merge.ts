/** Merging slice reports of one plan (docs/sharding.md, "Merging"): every planned file once. Pure. */
import { summarizeCost } from "./cost-apply.ts";
import {
  EXIT,
  REPORT_SCHEMA_VERSION,
  summarize,
  type MergedFrom,
  type PlanManifest,
  type RunReport,
  type ShardResult,
  type Summary,
} from "./report-model.ts";
import { decideRun } from "./run-verdict.ts";
import { neverStarted } from "./verdict.ts";

/** One slice's report and where it was read from (named in errors). */
export interface SliceReport {
  source: string;
  report: RunReport;
}

/** Inputs that cannot be merged honestly: the CLI prints the message and exits 2. */
export class MergeError extends Error {
  override name = "MergeError";
}

/** Values of the merged report that do not come from the slices. */
export interface MergeOptions {
  runId: string;
  toolVersion: string;
  /** Stands in for a finish time no slice recorded. */
  now: Date;
}

const label = (s: SliceReport) => `slice ${s.report.slice?.index}/${s.report.slice?.count} (${s.source})`;

/**
 * Merges slice reports into one report of the whole plan, shards in plan order renumbered 1..k.
 * @throws MergeError (exit 2) when inputs are missing, not slice reports, of different plans, repeat a slice, or
 *   report a file twice or from the wrong slice
 */
export function mergeSlices(inputs: readonly SliceReport[], options: MergeOptions): RunReport {
  const { plan, bySlice } = sliceInputs(inputs);
  const { shards, reportedBy } = reportedShards(inputs, plan);
  shards.push(...unreportedShards(plan, bySlice, reportedBy));
  const ordered = inPlanOrder(shards, plan);
  const reports = [...bySlice.values()].map((i) => i.report);
  const first = [...bySlice.entries()].sort((a, b) => a[0] - b[0])[0]![1].report;
  const startedAt = reports.map((r) => r.startedAt).sort()[0]!;
  const finishes = reports.map((r) => r.finishedAt);
  const finishedAt = finishes.every((f) => f !== null)
    ? (finishes as string[]).sort().at(-1)!
    : options.now.toISOString();
  const allSlices = Array.from({ length: plan.slices }, (_, i) => i + 1);
  const cost = summarizeCost(ordered);
  const summary = { ...summarize(ordered), ...(cost ? { cost } : {}) };
  return {
    schemaVersion: REPORT_SCHEMA_VERSION,
    runId: options.runId,
    completed: allSlices.every((i) => bySlice.get(i)?.report.completed === true),
    cancelledBy: null,
    startedAt,
    finishedAt,
    durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
    exitCode: mergedExitOk(ordered, summary, plan, bySlice) ? EXIT.ok : EXIT.failed,
    root: first.root,
    tool: { name: "shardguard", version: options.toolVersion },
    bun: first.bun,
    settings: first.settings,
    summary,
    preset: first.preset,
    sweeps: {
      staleRuns: reports.flatMap((r) => r.sweeps.staleRuns),
      endOfRun: reports.flatMap((r) => r.sweeps.endOfRun),
    },
    plan,
    slice: null,
    merged: { slices: allSlices.map((i) => mergedSlice(i, bySlice.get(i))) },
    rerunOf: null,
    shards: ordered,
  };
}

/**
 * The plan of the inputs and each input by slice index (docs/sharding.md, "Merging").
 * @throws MergeError naming the input (and for hashes every slice and its hash)
 */
function sliceInputs(inputs: readonly SliceReport[]): { plan: PlanManifest; bySlice: Map<number, SliceReport> } {
  if (inputs.length === 0) throw new MergeError("no slice report to merge");
  for (const input of inputs) {
    if (!input.report.plan || !input.report.slice) {
      throw new MergeError(
        `${input.source}: run ${input.report.runId} is not a slice of a plan (it was not run with --shard I/N)`,
      );
    }
  }
  const hashes = new Set(inputs.map((i) => i.report.plan!.hash));
  if (hashes.size > 1) {
    throw new MergeError(
      `the slices come from different plans: ` +
        `${inputs.map((i) => `${label(i)} has plan hash ${i.report.plan!.hash}`).join(", ")}; ` +
        "every slice must plan the same files the same way (same PATTERNs, --files-per-shard, N and timings)",
    );
  }
  const plan: PlanManifest = inputs[0]!.report.plan!;
  const bySlice = new Map<number, SliceReport>();
  for (const input of inputs) {
    const other = bySlice.get(input.report.slice!.index);
    if (other)
      throw new MergeError(
        `slice ${input.report.slice!.index}/${plan.slices} was given twice: ${other.source} and ${input.source}`,
      );
    bySlice.set(input.report.slice!.index, input);
  }
  return { plan, bySlice };
}

/**
 * Every shard of every input and which input reported each file (docs/sharding.md, "Merging").
 * @throws MergeError for a file reported twice, not in the plan, or by another slice than its own
 */
function reportedShards(
  inputs: readonly SliceReport[],
  plan: PlanManifest,
): { shards: ShardResult[]; reportedBy: Map<string, SliceReport> } {
  const planned = new Map(plan.shards.flatMap((s) => s.files.map((f) => [f, s] as const)));
  const reportedBy = new Map<string, SliceReport>();
  const shards: ShardResult[] = [];
  for (const input of inputs) {
    const index = input.report.slice!.index;
    for (const shard of input.report.shards) {
      for (const file of shard.files) {
        const first = reportedBy.get(file);
        if (first)
          throw new MergeError(
            `${file} is reported by ${label(first)} and ${label(input)}; a file belongs to one slice`,
          );
        reportedBy.set(file, input);
        const owner = planned.get(file);
        if (!owner) throw new MergeError(`${label(input)} reports ${file}, which is not in the plan`);
        if (owner.slice !== index)
          throw new MergeError(
            `${label(input)} reports ${file}, which the plan gives to slice ${owner.slice}/${plan.slices}`,
          );
      }
      shards.push(shard);
    }
  }
  return { shards, reportedBy };
}

/** A never-started shard per planned shard with files no input reported (docs/sharding.md, "Merging"). */
function unreportedShards(
  plan: PlanManifest,
  bySlice: ReadonlyMap<number, SliceReport>,
  reportedBy: ReadonlyMap<string, SliceReport>,
): ShardResult[] {
  const shards: ShardResult[] = [];
  for (const owner of plan.shards) {
    const missing = owner.files.filter((f) => !reportedBy.has(f));
    if (missing.length === 0) continue;
    const reason = bySlice.has(owner.slice)
      ? `slice ${owner.slice}/${plan.slices} did not report this file`
      : `slice ${owner.slice}/${plan.slices} reported nothing`;
    shards.push(neverStarted({ index: owner.index, slug: owner.slug, files: missing }, reason));
  }
  return shards;
}

/** The shards in plan order (by their first file's place in the plan), renumbered 1..k. */
function inPlanOrder(shards: readonly ShardResult[], plan: PlanManifest): ShardResult[] {
  const position = new Map(plan.shards.flatMap((s) => s.files).map((f, i) => [f, i]));
  return shards
    .map((s) => ({ s, at: Math.min(...s.files.map((f) => position.get(f) ?? Infinity)) }))
    .sort((a, b) => a.at - b.at)
    .map(({ s }, i) => ({ ...s, index: i + 1 }));
}

/** Whether the merge exits 0: the run's verdict over the whole plan, every reporting slice run exited 0. */
function mergedExitOk(
  ordered: readonly ShardResult[],
  summary: Summary,
  plan: PlanManifest,
  bySlice: ReadonlyMap<number, SliceReport>,
): boolean {
  const allSlices = Array.from({ length: plan.slices }, (_, i) => i + 1);
  return (
    decideRun(ordered, summary, { final: true, cancelledBy: null, filtersByName: false }).exitCode === EXIT.ok &&
    allSlices.every(
      (i) =>
        bySlice.get(i)?.report.exitCode === EXIT.ok || (!bySlice.has(i) && !plan.shards.some((s) => s.slice === i)),
    )
  );
}

/** One entry of `merged.slices`; nulls for a slice that reported nothing. */
function mergedSlice(index: number, input: SliceReport | undefined): MergedFrom["slices"][number] {
  return {
    index,
    runId: input?.report.runId ?? null,
    exitCode: input?.report.exitCode ?? null,
    source: input?.source ?? null,
  };
}
