/**
 * Keeping hot functions out of JavaScriptCore's top tier (FTL).
 *
 * A run of a few hundred milliseconds calls its per-event and per-testcase
 * readers thousands of times, enough for JSC to compile them with FTL on
 * its JIT threads, but ends before that compilation pays for itself. FTL
 * compiles of a handful of byte readers (one took 30-70 ms alone) were most
 * of the JIT threads' ~140 ms of CPU in a P3 run (300 files in six shards),
 * and on two cores that CPU is taken from the shard children. These
 * functions still reach JSC's optimizing DFG tier, so long runs keep most
 * of the speed: P8 (100,000 tests in one file) measured the same with and
 * without (bench/README.md). JSC's options cannot be changed for the whole
 * process once it runs, hence one call per function.
 */
import { noFTL } from "bun:jsc";

/** Marks each of `functions` as never to be compiled by FTL (bun:jsc `noFTL`); they still reach the DFG tier. */
export function keepOutOfFTL(...functions: ((...args: never[]) => unknown)[]): void {
  for (const fn of functions) noFTL(fn as (...args: unknown[]) => unknown);
}
