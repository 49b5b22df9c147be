/** `--update-timings`: this run's per-file durations merged into a Bun timings file (plan/timings.ts). */
import { readTimingsFile, renderTimings } from "../plan/timings.ts";
import type { ConsoleOut } from "../report/console.ts";
import type { ShardResult } from "../results/report-model.ts";
import { writeFileAtomic } from "../util/atomic.ts";
import { plural } from "../util/format.ts";

/**
 * Per-file wall time (ms) of the shards that ran, start-up included; a batch split by its files' test durations.
 * A shard cut short measured a lower bound: it never lowers what `previous` (path → ms) records.
 */
export function measuredDurations(
  shards: readonly ShardResult[],
  previous: Readonly<Record<string, number>> = {},
): Map<string, number> {
  const out = new Map<string, number>();
  for (const shard of shards) {
    if (shard.startedAt === null || shard.files.length === 0) continue;
    const cutShort = shard.killedBy !== null || shard.status === "timed-out" || shard.status === "crashed";
    const put = (file: string, ms: number) => out.set(file, cutShort ? Math.max(ms, previous[file] ?? 0) : ms);
    if (shard.files.length === 1) {
      put(shard.files[0]!, shard.durationMs);
      continue;
    }
    const perFile = new Map(shard.files.map((f) => [f, 0]));
    for (const t of shard.tests) if (perFile.has(t.file)) perFile.set(t.file, perFile.get(t.file)! + t.durationMs);
    const sum = [...perFile.values()].reduce((a, b) => a + b, 0);
    for (const [file, ms] of perFile)
      put(file, sum > 0 ? (shard.durationMs * ms) / sum : shard.durationMs / shard.files.length);
  }
  return out;
}

/** Merges the measured durations into `file` atomically; a failure is one console line (the tests already ran). */
export async function updateTimingsFile(file: string, shards: readonly ShardResult[], out: ConsoleOut): Promise<void> {
  try {
    const previous = readTimingsFile(file, "--update-timings");
    const measured = measuredDurations(shards, previous?.files);
    await writeFileAtomic(file, renderTimings(previous, measured));
    out.line(`shardguard: timings of ${plural(measured.size, "file")} merged into ${file}`);
  } catch (error) {
    out.line(`shardguard: could not update the timings file ${file}: ${(error as Error).message}`);
  }
}
