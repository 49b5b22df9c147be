/** Quarantine marks on a run's test entries (docs/history.md). */
import type { ShardResult } from "../results/report-model.ts";

/** Shards with each test of `quarantine` marked; the same objects when nothing is quarantined. */
export function markQuarantined(shards: ShardResult[], quarantine: ReadonlySet<string> | undefined): ShardResult[] {
  if (!quarantine || quarantine.size === 0) return shards;
  return shards.map((shard) =>
    shard.tests.some((t) => quarantine.has(`${t.file} > ${t.name}`))
      ? {
          ...shard,
          tests: shard.tests.map((t) => (quarantine.has(`${t.file} > ${t.name}`) ? { ...t, quarantined: true } : t)),
        }
      : shard,
  );
}
