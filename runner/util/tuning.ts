/**
 * Every engine tuning and fast path the runner keeps, in one place; what each buys and what was
 * removed: bench/README.md, "Where the time goes". To weigh one again, turn it off and run bench/perf.ts.
 * Fast paths kept beside their general path: results/xml-scan.ts `bunTestcaseTag`, results/junit-read.ts
 * `hasNothingToCut`, results/report-model.ts `plainTestCopy`, and modules imported on demand.
 */
import { noFTL } from "bun:jsc";

/**
 * Keeps `functions` out of JSC's top tier (bun:jsc `noFTL`): a short run pays for FTL compiles on JIT
 * threads, taking CPU from the shard children, and ends before they pay off. Per function, as JSC's
 * options cannot change once the process runs.
 */
export function keepOutOfFTL(...functions: ((...args: never[]) => unknown)[]): void {
  for (const fn of functions) noFTL(fn as (...args: unknown[]) => unknown);
}

/** Start tags of a scanned XML document between two young-generation collections. */
export const SCAN_ELEMENTS_PER_YOUNG_COLLECTION = 16_384;

/** A young-generation collection: a long scan leaves garbage per tag that the collector lets pile up. */
export function youngCollection(): void {
  Bun.gc(false);
}

/** A full, synchronous collection: after a large shard the heap is mostly garbage, which rendering reuses. */
export function fullCollection(): void {
  Bun.gc(true);
}
