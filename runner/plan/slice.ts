/**
 * Slicing a plan for several machines (`--shard I/N`, docs/sharding.md): each computes the same plan and runs its
 * own slice of whole shards. Pure: durations come in as a map.
 */
import { ConfigError } from "../config/settings-schema.ts";
import { sha256Hex } from "../util/random.ts";
import { sliceFromCiEnv } from "./ci-slice.ts";
import type { Plan, PlannedShard } from "./plan.ts";

/** `--shard I/N`: slice `index` (1-based) of `count`. */
export interface SliceSpec {
  index: number;
  count: number;
}

/** One planned shard of the whole plan and the slice that runs it. */
export interface ManifestShard {
  /** 1-based position in the whole plan. */
  index: number;
  slug: string;
  files: string[];
  /** 1-based slice. */
  slice: number;
}

/** The whole plan as every slice records it (RunReport.plan): shards with their slices and a hash of exactly that. */
export interface SliceManifest {
  /** 16 hex digits of SHA-256 over `slices` and each shard's files and slice. */
  hash: string;
  slices: number;
  shards: ManifestShard[];
}

/** Largest N accepted by `--shard I/N`. */
export const MAX_SLICES = 10_000;

/**
 * Parses `I/N`, or `auto`: the slice from the CI's parallel-job variables in `env` (plan/ci-slice.ts).
 * @throws ConfigError naming the value and what is accepted
 */
export function parseSliceSpec(raw: string, env: Record<string, string | undefined> = {}): SliceSpec {
  if (raw.trim() === "auto") return sliceFromCiEnv(env, MAX_SLICES);
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || index < 1 || count < 1 || index > count || count > MAX_SLICES) {
    throw new ConfigError(
      `invalid --shard ${JSON.stringify(raw)}: expected I/N, the slice I of N machines, with 1 <= I <= N <= ` +
        `${MAX_SLICES} (e.g. --shard 2/3), or auto (from the CI's parallel-job variables)`,
    );
  }
  return { index, count };
}

/**
 * Splits shards into `count` disjoint slices, greedy longest first (LPT) by recorded ms (unrecorded at the mean),
 * else by file count; ties to the slice with fewer shards. No slice is empty while shards suffice; plan order kept.
 */
export function sliceShards(
  shards: readonly PlannedShard[],
  count: number,
  durations: ReadonlyMap<string, number> = new Map(),
): PlannedShard[][] {
  const known = shards.flatMap((s) => s.files).filter((f) => durations.has(f));
  const mean = known.length > 0 ? known.reduce((sum, f) => sum + durations.get(f)!, 0) / known.length : 0;
  const weight = (s: PlannedShard) =>
    known.length > 0 ? s.files.reduce((sum, f) => sum + (durations.get(f) ?? mean), 0) : s.files.length;
  const order = shards
    .map((shard, position) => ({ shard, position, w: weight(shard) }))
    .sort((a, b) => b.w - a.w || a.position - b.position);
  const slices = Array.from({ length: count }, () => ({
    w: 0,
    items: [] as { shard: PlannedShard; position: number }[],
  }));
  for (const item of order) {
    let best = 0;
    for (let i = 1; i < count; i++) {
      const a = slices[i]!;
      const b = slices[best]!;
      if (a.w < b.w || (a.w === b.w && a.items.length < b.items.length)) best = i;
    }
    slices[best]!.w += item.w;
    slices[best]!.items.push(item);
  }
  return slices.map((s) => s.items.sort((a, b) => a.position - b.position).map((i) => i.shard));
}

/** Every shard in plan order with its slice, and a hash equal on two machines exactly when their slicing is. */
export function sliceManifest(
  shards: readonly PlannedShard[],
  slices: readonly (readonly PlannedShard[])[],
): SliceManifest {
  const sliceOf = new Map<number, number>();
  for (const [i, slice] of slices.entries()) for (const s of slice) sliceOf.set(s.index, i + 1);
  const entries = shards.map((s) => ({
    index: s.index,
    slug: s.slug,
    files: [...s.files],
    slice: sliceOf.get(s.index) ?? 0,
  }));
  const hash = sha256Hex(
    JSON.stringify({ slices: slices.length, shards: entries.map((e) => [e.files, e.slice]) }),
  ).slice(0, 16);
  return { hash, slices: slices.length, shards: entries };
}

/** A plan cut down to one slice, the manifest of the whole, and the slice's shard count. */
export interface SlicedPlan {
  /** Only this slice's shards, renumbered 1..k in plan order (console lines and logs count within the machine). */
  plan: Plan;
  manifest: SliceManifest;
  spec: SliceSpec;
}

/** Slices `plan`, keeping slice `spec.index`: empty when N exceeds the shard count (the caller runs nothing). */
export function slicePlan(plan: Plan, spec: SliceSpec, durations?: ReadonlyMap<string, number>): SlicedPlan {
  const slices = sliceShards(plan.shards, spec.count, durations);
  const mine = slices[spec.index - 1] ?? [];
  const files = new Set(mine.flatMap((s) => s.files));
  return {
    plan: {
      ...plan,
      shards: mine.map((s, i) => ({ ...s, index: i + 1 })),
      included: new Map([...plan.included].filter(([f]) => files.has(f))),
    },
    manifest: sliceManifest(plan.shards, slices),
    spec,
  };
}
