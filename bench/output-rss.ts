#!/usr/bin/env bun
/**
 * Benchmark: the runner's memory while a shard prints a lot (bench/README.md).
 *
 * Writes one test file into a temp dir that prints N bytes to stdout in
 * 1 MiB chunks, runs the real CLI on it (`shardguard run --jobs 1`) as a
 * child process, and samples the CLI process, which is the runner that
 * supervises the shard (the child writes its output to its log itself),
 * from Linux /proc/<pid>/status:
 * VmHWM (the kernel's peak-RSS high-water mark) and VmRSS. The `bun test`
 * child is a separate process; its peak is shown for context only.
 *
 * Two runs: a baseline that prints 1 MiB, then N bytes. Reports, for each:
 * wall time, bytes printed, bytes in the shard log, throughput, the runner's
 * peak RSS and the child's; then the ratio of the two runner peaks.
 *
 * Usage: bun bench/output-rss.ts [--bytes N] [--limit-mib 150] [--keep]
 *   --bytes      bytes to print; suffixes K, M, G are binary (1G = 1 GiB); default 1G
 *   --limit-mib  the runner's peak RSS must stay below this, MiB; default 150
 *   --keep       keep the temp dirs (the logs are N bytes each)
 * Exits 1 when the runner's peak RSS reaches the limit, when the shard did
 * not pass, or when its log holds fewer than N bytes. Linux only (/proc).
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { comparePeaks, inTempDir, MiB, option, parseBytes, runSampled } from "./peak-rss.ts";

const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");
const SAMPLE_MS = 20;
const BASELINE_BYTES = MiB;

const BYTES = parseBytes(option("bytes") ?? "1G");
const LIMIT_MIB = Number(option("limit-mib") ?? 150);
if (!(LIMIT_MIB > 0)) throw new Error("--limit-mib needs a positive number");
const KEEP = process.argv.includes("--keep");
if (process.platform !== "linux") throw new Error("bench/output-rss.ts reads /proc and runs on Linux only");

/** The test file: prints `bytes` bytes of 1 KiB lines, waiting for 'drain' (Bun drops unflushed stdout at exit). */
function fixture(bytes: number): string {
  return `import { test } from "bun:test";
test("prints ${bytes} bytes", async () => {
  const chunk = Buffer.from(\`\${"y".repeat(1023)}\\n\`.repeat(1024));
  for (let left = ${bytes}; left > 0; left -= chunk.length) {
    const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
    if (!process.stdout.write(part)) await new Promise((resolve) => process.stdout.once("drain", resolve));
  }
}, 3_600_000);
`;
}

interface Measurement {
  bytes: number;
  wallMs: number;
  logBytes: number;
  status: string;
  /** Peak RSS of the runner (the CLI process), bytes. */
  runnerPeak: number;
  /** Peak RSS of the `bun test` child, bytes (context only). */
  childPeak: number;
  dir: string;
}

async function measure(bytes: number): Promise<Measurement> {
  return inTempDir("sg-bench-rss-", KEEP, (dir) => measureIn(dir, bytes));
}

async function measureIn(dir: string, bytes: number): Promise<Measurement> {
  writeFileSync(path.join(dir, "output.test.ts"), fixture(bytes));
  const args = ["run", "--root", dir, "--jobs", "1", "--timeout", "3600", "--grace", "1"];
  const { code, wallMs, runnerPeak, childPeak } = await runSampled(CLI, args, dir, SAMPLE_MS);
  let status = `runner exited ${code}, no report`;
  let logBytes = 0;
  try {
    const report = JSON.parse(readFileSync(path.join(dir, ".shardguard", "report.json"), "utf8")) as {
      shards: { status: string; logPath: string | null }[];
    };
    const shard = report.shards[0];
    status = shard?.status ?? status;
    if (shard?.logPath) logBytes = statSync(shard.logPath).size;
  } catch {
    // Reported below through status and logBytes.
  }
  return { bytes, wallMs, logBytes, status, runnerPeak, childPeak, dir };
}

const mib = (bytes: number) => (bytes / MiB).toFixed(1);

function row(label: string, m: Measurement): string {
  const seconds = m.wallMs / 1000;
  return [
    label.padEnd(9),
    `${mib(m.bytes)} MiB printed`.padStart(20),
    `${m.logBytes} B logged`.padStart(22),
    `${seconds.toFixed(2)} s`.padStart(9),
    `${(m.logBytes / MiB / seconds).toFixed(0)} MiB/s`.padStart(11),
    `runner peak ${mib(m.runnerPeak)} MiB`.padStart(23),
    `child peak ${mib(m.childPeak)} MiB`.padStart(22),
    m.status,
  ].join("  ");
}

await comparePeaks({
  title:
    `shardguard output-rss bench: one shard printing ${BYTES} bytes (${mib(BYTES)} MiB); limit ${LIMIT_MIB} ` +
    `MiB runner peak RSS`,
  baselineBytes: BASELINE_BYTES,
  bytes: BYTES,
  limitMib: LIMIT_MIB,
  keep: KEEP,
  measure,
  row,
  check: (label, m) => {
    const found: string[] = [];
    if (m.status !== "passed") found.push(`${label} shard is ${m.status}, not passed`);
    if (m.logBytes < m.bytes) found.push(`${label} log holds ${m.logBytes} bytes, fewer than the ${m.bytes} printed`);
    return found;
  },
});
