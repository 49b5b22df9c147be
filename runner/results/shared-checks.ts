/**
 * One schema check per test entry for renderers that walk the same report
 * side by side (engine/report-writer.ts renders report.json and ctrf.json
 * together; each used to check every entry on its own, bench/README.md).
 */
import { validTest, type TestCheck, type TestResult } from "./report-model.ts";

/**
 * `readers` functions that each behave as {@link validTest} but share the
 * work: renderers that walk the same report's entries in the same order
 * (JSON and CTRF, rendered side by side) check each entry once, the first
 * to reach it running the schema and the others taking its checked copy.
 * A copy is kept only until every reader has passed it (a reader that runs
 * ahead holds as many as it is ahead). A reader that asks for an entry
 * other than the one the leader checked at that position (another report,
 * another order) gets it checked on its own, so sharing never hands over a
 * copy of a different entry.
 *
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
    // Dropped in batches (a shift per entry costs what the reader ahead is ahead).
    if (slowest - base >= 1024) {
      kept.splice(0, slowest - base);
      base = slowest;
    }
    return valid;
  });
}
