/** One schema check per test entry for renderers walking one report side by side (engine/report-writer.ts). */
import { validTest, type TestCheck, type TestResult } from "./report-model.ts";

/**
 * `readers` functions that behave as {@link validTest} but check each entry once, the first to reach it running
 * the schema. A copy is kept until every reader passed it; a different entry at that position is checked anew.
 * @throws ZodError (paths from `shards`), from whichever reader reaches a bad entry first
 */
export function sharedTestChecks(readers: number): TestCheck[] {
  const kept: { test: TestResult; shardIndex: number; index: number; valid: TestResult }[] = [];
  /** Reader position of `kept[0]`. */
  let base = 0;
  const positions = new Array<number>(readers).fill(0);
  return positions.map((_, reader) => (test, shardIndex, index) => {
    const at = positions[reader]!++;
    let valid: TestResult;
    const entry = kept[at - base];
    if (entry === undefined) {
      valid = validTest(test, shardIndex, index);
      kept.push({ test, shardIndex, index, valid });
    } else {
      valid =
        entry.test === test && entry.shardIndex === shardIndex && entry.index === index
          ? entry.valid
          : validTest(test, shardIndex, index);
    }
    let slowest = positions[0]!;
    for (const p of positions) if (p < slowest) slowest = p;
    // Dropped in batches: a shift per entry costs what the reader ahead is ahead.
    if (slowest - base >= 1024) {
      kept.splice(0, slowest - base);
      base = slowest;
    }
    return valid;
  });
}
