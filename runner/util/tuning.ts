/**
 * Every engine tuning and fast path the runner keeps, each for a measured
 * reason. Figures: Bun 1.4.4 on a shared 2-core machine (load 8-19), median
 * runner CPU (`process.cpuUsage`) and peak RSS of interleaved rounds of the
 * bench/perf.ts cases (P3: 300 files × 10 tests in six shards; P8: one file
 * of 100,000 tests), and cold in-process reads of the JUnit Bun writes for
 * P8 (9.8 MB). Anything whose effect was inside the noise was removed;
 * to weigh one again, turn it off and run `bun bench/perf.ts` (history:
 * `git log -p -- runner/util/tuning.ts`).
 *
 * Engine tuning, here:
 * - {@link keepOutOfFTL} for the per-event readers (events/wire.ts,
 *   events/compact.ts): P3 runner CPU 283-298 → 324-333 ms without it.
 * - {@link youngCollection} every {@link SCAN_ELEMENTS_PER_YOUNG_COLLECTION}
 *   elements of the XML scan (results/xml-scan.ts): P8 runner peak
 *   180-185 → 195-203 MiB without it (it costs ~13 ms of the read's CPU).
 * - {@link fullCollection} before rendering a report of 20,000 tests or
 *   more (engine/report-writer.ts): P8 runner peak 180-185 → 237-239 MiB
 *   without it.
 *
 * Fast paths beside a general path, kept in place:
 * - results/xml-scan.ts `bunTestcaseTag`, one regular expression for the
 *   `<testcase>` tag exactly as Bun writes it: reading P8's JUnit 89 → 156
 *   ms CPU without it, P8 runner CPU +140-180 ms. `wellFormedStartTag`, the
 *   one-pass read of any plain tag, serves the tags it does not match
 *   (another Bun's layout): 156 → 223 ms without either.
 * - results/junit-read.ts: a JUnit of up to 32 MiB read whole in one
 *   synchronous read and handed over as it is when `hasNothingToCut`:
 *   reading P8's JUnit 89 → 136-138 ms CPU through the cutter (streamed or
 *   whole alike), P8 runner CPU +150-260 ms streamed.
 * - results/report-model.ts `plainTestCopy`, zod's copy of a plain test entry built
 *   by hand (the entry's failure still checked by zod): P8 runner CPU
 *   +240-290 ms and peak +16-26 MiB without it, P3 peak +4-6 MiB.
 * - Modules imported on demand so that a plain `bun test` under the preset
 *   preload loads none of the preset library or zod (commands/preload-take-over.ts,
 *   presets/intercept-decision.ts), and the CLI's commands other than the one run
 *   (cli/main.ts).
 */
import { noFTL } from "bun:jsc";

/**
 * Marks each of `functions` as never to be compiled by JavaScriptCore's top
 * tier (FTL; bun:jsc `noFTL`); they still reach the DFG tier. A short run
 * calls the per-event readers often enough for FTL compiles on JSC's JIT
 * threads but ends before those pay off, and on two cores that CPU is taken
 * from the shard children. JSC's options cannot change for the whole
 * process once it runs, hence one call per function.
 */
export function keepOutOfFTL(...functions: ((...args: never[]) => unknown)[]): void {
  for (const fn of functions) noFTL(fn as (...args: unknown[]) => unknown);
}

/** Start tags of a scanned XML document between two young-generation collections. */
export const SCAN_ELEMENTS_PER_YOUNG_COLLECTION = 16_384;

/**
 * A young-generation collection (`Bun.gc(false)`): a long scan leaves a
 * little garbage per tag, which the collector otherwise lets pile up.
 */
export function youngCollection(): void {
  Bun.gc(false);
}

/**
 * A full, synchronous collection (`Bun.gc(true)`, ~50-100 ms after a shard
 * of 100,000 tests): after a large shard the heap is mostly garbage (Bun's
 * JUnit read, the evidence, the decision), which rendering then reuses
 * instead of growing the process.
 */
export function fullCollection(): void {
  Bun.gc(true);
}
