#!/usr/bin/env bun
/**
 * Benchmark: the runner's memory when a test sends thousands of large error
 * events (issue 25: a test rejecting N promises with 60 KB messages, then a
 * spinning test, took the runner to 202 MB peak RSS at N = 2,000, 636 MB at
 * 8,000 and 894 MB at 16,000, every error event held).
 *
 * Writes one test file into a temp dir: its first test rejects N promises,
 * each with a 60 KB message, none handled; its second spins until the
 * wall-clock timeout kills the shard. Runs the real CLI on it (`shardguard
 * run --jobs 1 --timeout T`) as a child process and samples the runner's
 * peak RSS from Linux /proc (bench/peak-rss.ts), first for a baseline of
 * N = 10, then for N. The `bun test` child's peak is shown for context only.
 *
 * Usage: bun bench/error-rss.ts [--count N] [--timeout S] [--limit-mib 150] [--keep]
 *   --count      rejected promises; default 16000
 *   --timeout    the target run's --timeout, seconds: long enough for the
 *                child to send every error before it spins (16,000 took
 *                Bun about a minute on 2 loaded cores); default 180. The
 *                baseline gets 15.
 *   --limit-mib  the runner's peak RSS must stay below this, MiB; default 150
 *   --keep       keep the temp dirs
 * Exits 1 when the runner's peak RSS reaches the limit, when the shard is
 * not `timed-out`, or when the rejecting test is not an ended test (it must
 * never be taken for one in flight). Linux only (/proc).
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { comparePeaks, inTempDir, intOption, MiB, rssBenchOptions, runSampled } from "./peak-rss.ts";

const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");
const SAMPLE_MS = 10;
const BASELINE_COUNT = 10;
const MESSAGE_BYTES = 60_000;

const COUNT = intOption("count", 16_000);
const TIMEOUT_S = intOption("timeout", 180);
const BASELINE_TIMEOUT_S = 15;
const OPTIONS = rssBenchOptions("bench/error-rss.ts");

function fixture(count: number): string {
  return (
    `import { test } from "bun:test";
test("rejects ${count} promises", async () => {
  for (let i = 0; i < ${count}; i++) void Promise.reject(new Error(\`rejection \${i} \` + ` +
    `"x".repeat(${MESSAGE_BYTES})));
  await Bun.sleep(100);
});
test("then the thread spins", () => {
  while (true) {}
});
`
  );
}

interface Measurement {
  /** Rejected promises. */
  bytes: number;
  wallMs: number;
  runnerPeak: number;
  childPeak: number;
  shard: string;
  /** Statuses of the two tests in report.json. */
  tests: string[];
  notes: string[];
  dir: string;
}

async function measure(count: number): Promise<Measurement> {
  return inTempDir("sg-bench-errors-", OPTIONS.keep, async (dir) => {
    writeFileSync(path.join(dir, "errors.test.ts"), fixture(count));
    const args = [
      "run",
      "--root",
      dir,
      "--jobs",
      "1",
      "--timeout",
      String(count === BASELINE_COUNT ? BASELINE_TIMEOUT_S : TIMEOUT_S),
      "--grace",
      "1",
    ];
    const { code, wallMs, runnerPeak, childPeak } = await runSampled(CLI, args, dir, SAMPLE_MS);
    let shard = `runner exited ${code}, no report`;
    let tests: string[] = [];
    let notes: string[] = [];
    try {
      const report = JSON.parse(readFileSync(path.join(dir, ".shardguard", "report.json"), "utf8")) as {
        shards: { status: string; notes?: string[]; tests: { status: string }[] }[];
      };
      shard = report.shards[0]?.status ?? shard;
      tests = report.shards[0]?.tests.map((t) => t.status) ?? [];
      notes = report.shards[0]?.notes ?? [];
    } catch {
      // Reported through the shard status.
    }
    return { bytes: count, wallMs, runnerPeak, childPeak, shard, tests, notes, dir };
  });
}

const mib = (bytes: number) => (bytes / MiB).toFixed(1);

function row(label: string, m: Measurement): string {
  return [
    label.padEnd(9),
    `${m.bytes} errors of 60 KB`.padStart(20),
    `${(m.wallMs / 1000).toFixed(2)} s`.padStart(8),
    `runner peak ${mib(m.runnerPeak)} MiB`.padStart(23),
    `child peak ${mib(m.childPeak)} MiB`.padStart(22),
    `${m.shard}: ${m.tests.join(", ")}`,
    m.notes.join("; "),
  ].join("  ");
}

await comparePeaks({
  ...OPTIONS,
  title:
    `shardguard error-rss bench: ${COUNT} rejected promises with 60 KB messages, then a spin; limit ` +
    `${OPTIONS.limitMib} MiB runner peak RSS`,
  baselineBytes: BASELINE_COUNT,
  bytes: COUNT,
  measure,
  row,
  check: (label, m) => {
    const found: string[] = [];
    if (m.shard !== "timed-out") found.push(`${label} shard is ${m.shard}, not timed-out`);
    if (m.tests[0] !== "failed" && m.tests[0] !== "passed")
      found.push(`${label} the rejecting test is ${m.tests[0]}: an ended test taken for one in flight`);
    if (m.tests[1] !== "timed-out") found.push(`${label} the spinning test is ${m.tests[1]}, not timed-out`);
    return found;
  },
});
