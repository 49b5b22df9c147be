/** Batching keeps kill isolation: a killed batch's never-started files leave its result and run again. */
import type { RunSettings } from "../config/settings-schema.ts";
import { isolates } from "../exec/bun-command.ts";
import { shardSlug, type PlannedShard } from "../plan/plan.ts";
import { plural } from "../report/console.ts";
import type { ShardResult } from "../results/report-model.ts";

/**
 * How many shards a killed batch's unstarted files run again in: `--jobs` for shared `--files-per-shard auto`
 * batches (one per file would load the suite's modules per file), else one per file.
 */
export function redispatchBatches(settings: Pick<RunSettings, "filesPerShard" | "bunArgs" | "jobs">): number {
  const shared = settings.filesPerShard === "auto" && !isolates(settings.bunArgs);
  return shared ? settings.jobs : Number.POSITIVE_INFINITY;
}

/**
 * A killed or crashed (not cancelled) shard of several files: its files without a start mark leave its result and
 * become new shards from `firstIndex`, so one wedged file costs only its own shard. The first file, or one its
 * events name as in flight, keeps the shard's verdict (Bun runs files in the order given).
 *
 * @param filesNotStarted planned files (relative to root) without a file mark
 * @param batches how many shards the files run again in, contiguous runs of the shard's order (default one per
 *   file; shared `--files-per-shard auto` batches pass `--jobs`, so the files again share a process as planned)
 * @returns the new shards, in the shard's file order; `result` is edited in place
 */
export function splitKilledBatch(
  shard: PlannedShard,
  result: ShardResult,
  filesNotStarted: readonly string[],
  firstIndex: number,
  batches = Number.POSITIVE_INFINITY,
): PlannedShard[] {
  if (shard.files.length < 2 || filesNotStarted.length === 0) return [];
  if (result.killedBy === "cancel" || (result.status !== "timed-out" && result.status !== "crashed")) return [];
  // A file already in flight from its events (a hung beforeAll or load) keeps that verdict: a rerun repeats the hang.
  const inFlight = new Set(
    result.tests.filter((t) => !t.synthetic && (t.status === "timed-out" || t.status === "crashed")).map((t) => t.file),
  );
  const candidates = filesNotStarted.filter((f) => !inFlight.has(f));
  const again = candidates.length === shard.files.length ? candidates.filter((f) => f !== shard.files[0]) : candidates;
  if (again.length === 0) return [];
  const moved = new Set(again);
  const count = Math.max(1, Math.min(again.length, batches));
  const groups = Array.from({ length: count }, (_, i) =>
    again.slice(Math.floor((i * again.length) / count), Math.floor(((i + 1) * again.length) / count)),
  );
  const added = groups.map((files, i): PlannedShard => ({ index: firstIndex + i, slug: shardSlug(files), files }));
  result.files = result.files.filter((f) => !moved.has(f));
  result.tests = result.tests.filter((t) => !moved.has(t.file));
  const first = added[0]!.index;
  const last = added[added.length - 1]!.index;
  result.reason +=
    `; ${plural(again.length, "file")} in which no test started run again in ` +
    `shard${added.length > 1 ? `s ${first}-${last}` : ` ${first}`}`;
  return added;
}
