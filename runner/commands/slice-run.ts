/** What `run|list --shard I/N` adds to a run: the slice's header line and what its reports record. */
import type { SlicedPlan } from "../plan/slice.ts";
import { plural } from "../util/format.ts";
import type { RunInputs } from "../engine/run.ts";

/** What a slice's reports record: the whole plan's manifest and which slice they cover. */
export function sliceProvenance(sliced: SlicedPlan): NonNullable<RunInputs["provenance"]> {
  const m = sliced.manifest;
  return {
    plan: { hash: m.hash, slices: m.slices, shards: m.shards },
    slice: { index: sliced.spec.index, count: sliced.spec.count },
  };
}

/** `shardguard: slice 2/3: 4 shards of the plan's 12 (plan hash …)`, saying so when the slice is empty. */
export function sliceHeader(sliced: SlicedPlan, planShards: number): string {
  const { spec, manifest } = sliced;
  const head =
    `shardguard: slice ${spec.index}/${spec.count}: ${plural(sliced.plan.shards.length, "shard")} of the ` +
    `plan's ${planShards} (plan hash ${manifest.hash})`;
  return sliced.plan.shards.length === 0
    ? `${head}: this slice is empty (more slices than shards); nothing to run`
    : head;
}
