/**
 * What `resources` and `exclusive` add to a run: the dispatch order, the pool's gate (exec/resource-gate.ts), and
 * what the console and reports say of waits. A run without either gets no gate.
 */
import type { RunSettings } from "../config/settings-schema.ts";
import { describeWait, ResourceGate, simulateMakespan } from "../exec/resource-gate.ts";
import type { PlannedShard } from "../plan/plan.ts";
import { orderByTimings } from "../plan/timings.ts";
import { exclusiveLast, resourcePlan, type ResourcePlan, type ShardNeeds } from "../plan/resources.ts";
import type { ShardResult } from "../results/report-model.ts";

/** The resource side of one run; every method is a no-op when the run sets neither setting. */
export class RunResources {
  private readonly plan: ResourcePlan;
  /** The pool's gate; undefined without resource settings (the pool then takes shards in order). */
  readonly gate: ResourceGate<PlannedShard> | undefined;
  /** Shards the gate has seen, by index: a result is matched to its wait through it. */
  private readonly byIndex = new Map<number, PlannedShard>();
  private readonly needs = new Map<PlannedShard, ShardNeeds>();

  constructor(settings: Pick<RunSettings, "exclusive" | "resources">) {
    this.plan = resourcePlan(settings);
    this.gate = this.plan.active
      ? new ResourceGate((s: PlannedShard) => this.needsOf(s), this.plan.capacity)
      : undefined;
  }

  private needsOf(shard: PlannedShard): ShardNeeds {
    let needs = this.needs.get(shard);
    if (!needs) {
      this.needs.set(shard, (needs = this.plan.needsOf(shard.files)));
      this.byIndex.set(shard.index, shard);
    }
    return needs;
  }

  /** The dispatch order: `shards` (plan or timings order) with the exclusive ones last. */
  order(shards: readonly PlannedShard[]): PlannedShard[] {
    return exclusiveLast(shards, this.plan);
  }

  /** For the START line: the wait for resources, or "" when the shard did not wait. */
  startNote(shard: PlannedShard): string {
    return this.gate ? describeWait(this.gate.waited(shard)) : "";
  }

  /** Appended to the reason of a shard that never started: its wait for a resource, or "". */
  notStartedNote(shard: PlannedShard): string {
    const wait = this.gate?.waiting(shard) ?? null;
    return wait === null ? "" : `; it was waiting ${(wait.ms / 1000).toFixed(1)} s for ${wait.for.join(", ")}`;
  }

  /** `result` with its shard's `locks`, `exclusive` and wait (report-model.ts); unchanged without resource settings. */
  annotate(result: ShardResult): ShardResult {
    if (!this.gate) return result;
    const shard = this.byIndex.get(result.index);
    const needs = shard ? this.needsOf(shard) : this.plan.needsOf(result.files);
    const wait = shard ? (this.gate.waited(shard) ?? this.gate.waiting(shard)) : null;
    return {
      ...result,
      locks: needs.locks,
      exclusive: needs.exclusive,
      ...(wait ? { waitedMs: wait.ms, waitedFor: wait.for } : {}),
    };
  }
}

/**
 * The makespan (ms) the plan predicts from `--timings`, with the resource settings and without, on a simulated
 * pool clock (a file without a record: the mean). Null without durations.
 */
export function plannedMakespan(
  shards: readonly PlannedShard[],
  settings: Pick<RunSettings, "jobs" | "exclusive" | "resources">,
  durations: ReadonlyMap<string, number>,
): { withLocks: number; without: number } | null {
  const known = shards.flatMap((s) => s.files).filter((f) => durations.has(f));
  if (known.length === 0) return null;
  const mean = known.reduce((sum, f) => sum + durations.get(f)!, 0) / known.length;
  const ms = (s: PlannedShard) => s.files.reduce((sum, f) => sum + (durations.get(f) ?? mean), 0);
  const ordered = orderByTimings(shards, durations);
  const plan = resourcePlan(settings);
  const none: ShardNeeds = { locks: [], exclusive: false };
  return {
    withLocks: simulateMakespan(
      exclusiveLast(ordered, plan),
      settings.jobs,
      ms,
      (s) => plan.needsOf(s.files),
      plan.capacity,
    ),
    without: simulateMakespan(ordered, settings.jobs, ms, () => none, new Map()),
  };
}
