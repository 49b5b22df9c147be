/**
 * Batching keeps kill isolation (bench/README.md): the files of a killed batched
 * shard that never started there are taken out of its result and run again.
 */
import { shardSlug, type PlannedShard } from "../plan/plan.ts";
import { plural } from "../report/console.ts";
import type { ShardResult } from "../results/report-model.ts";

/**
 * When a shard of several files was killed or crashed (not cancelled), the
 * files in which the child preload marked no test start never ran there.
 * They leave that shard's result (its `files` and `tests`; its reason says
 * where they went) and become shards of one file each, numbered from
 * `firstIndex`, so they get their true status and appear once in the
 * reports. One file per new shard guarantees progress: a file that wedges
 * while loading (it leaves no mark) then costs only its own shard, and a
 * one-file shard is never split. Bun runs a shard's files in the order
 * given, so when no file has a mark the first one (loading, or without
 * tests, when the process ended) keeps the shard's verdict; so does a file
 * without marks that the verdict names as in flight from its events (its
 * tests were found, none started: a beforeAll hook hung).
 *
 * @param filesNotStarted planned files (relative to root) without a file mark
 * @returns the new shards, in the shard's file order; `result` is edited in place
 */
export function splitKilledBatch(
  shard: PlannedShard,
  result: ShardResult,
  filesNotStarted: readonly string[],
  firstIndex: number,
): PlannedShard[] {
  if (shard.files.length < 2 || filesNotStarted.length === 0) return [];
  if (result.killedBy === "cancel" || (result.status !== "timed-out" && result.status !== "crashed")) return [];
  // A file the verdict already names as in flight from its events (its tests were found, then a beforeAll
  // hook or its loading hung: a timed-out or crashed entry of its own) keeps that verdict:
  // running it again would only spend another whole timeout on the same hang.
  const inFlight = new Set(
    result.tests.filter((t) => !t.synthetic && (t.status === "timed-out" || t.status === "crashed")).map((t) => t.file),
  );
  const candidates = filesNotStarted.filter((f) => !inFlight.has(f));
  const again = candidates.length === shard.files.length ? candidates.filter((f) => f !== shard.files[0]) : candidates;
  if (again.length === 0) return [];
  const moved = new Set(again);
  const added = again.map(
    (file, i): PlannedShard => ({ index: firstIndex + i, slug: shardSlug([file]), files: [file] }),
  );
  result.files = result.files.filter((f) => !moved.has(f));
  result.tests = result.tests.filter((t) => !moved.has(t.file));
  const first = added[0]!.index;
  const last = added[added.length - 1]!.index;
  result.reason += `; ${plural(added.length, "file")} in which no test started run again in shard${added.length > 1 ? `s ${first}-${last}` : ` ${first}`}`;
  return added;
}
