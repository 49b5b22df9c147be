#!/usr/bin/env bun
/**
 * Benchmark: the runner's memory when a test fails with a huge message
 * (bench/README.md: a 20 MiB `Error` message took the runner to 1.26 GB peak RSS
 * and wrote 42 MB report.json and ctrf.json).
 *
 * Writes one test file into a temp dir whose test throws an Error with an
 * N-byte message, runs the real CLI on it (`shardguard run --jobs 1`) as a
 * child process, and samples the CLI process (the runner) from Linux
 * /proc/<pid>/status: VmHWM (the kernel's peak-RSS high-water mark) and
 * VmRSS. The `bun test` child is a separate process (it builds the message
 * and Bun's 2N-byte JUnit file); its peak is shown for context only.
 *
 * Two runs in the same invocation: a baseline whose message is 1 KiB (the
 * runner's fixed cost), then N bytes. For each: wall time, the runner's and
 * the child's peak RSS, the sizes of the three reports; then the ratio of the
 * two runner peaks.
 *
 * Usage: bun bench/failure-rss.ts [--bytes N] [--limit-mib 150] [--events off] [--keep]
 *   --bytes      message size; suffixes K, M, G are binary (20M = 20 MiB); default 20M
 *   --limit-mib  the runner's peak RSS must stay below this, MiB; default 150
 *   --events off run with --no-test-events (only Bun's JUnit carries the text)
 *   --keep       keep the temp dirs
 * Exits 1 when the runner's peak RSS reaches the limit, when the shard is
 * not `failed`, or when a report exceeds 1 MiB. Linux only (/proc).
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { comparePeaks, inTempDir, MiB, option, parseBytes, runSampled } from "./peak-rss.ts";

const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");
const SAMPLE_MS = 10;
const BASELINE_BYTES = 1024;
/** A report with a capped failure is ~200 KiB; more means text was not capped. */
const REPORT_LIMIT = MiB;

const BYTES = parseBytes(option("bytes") ?? "20M");
const LIMIT_MIB = Number(option("limit-mib") ?? 150);
if (!(LIMIT_MIB > 0)) throw new Error("--limit-mib needs a positive number");
const EVENTS = option("events") !== "off";
const KEEP = process.argv.includes("--keep");
if (process.platform !== "linux") throw new Error("bench/failure-rss.ts reads /proc and runs on Linux only");

/** The test file: one test that throws an Error whose message is `bytes` bytes ending in a recognisable tail. */
function fixture(bytes: number): string {
  return `import { test } from "bun:test";
test("throws a ${bytes}-byte message", () => {
  throw new Error("x".repeat(${bytes} - 8) + "THE-TAIL");
});
`;
}

interface Measurement {
  bytes: number;
  wallMs: number;
  status: string;
  /** Peak RSS of the runner (the CLI process), bytes. */
  runnerPeak: number;
  /** Peak RSS of the `bun test` child, bytes (context only). */
  childPeak: number;
  /** Sizes of junit.xml, report.json, ctrf.json, bytes. */
  reports: { junit: number; json: number; ctrf: number };
  /** True when report.json's failure text keeps the message's tail and names the log. */
  tailKept: boolean;
  dir: string;
}

async function measure(bytes: number): Promise<Measurement> {
  return inTempDir("sg-bench-fail-", KEEP, (dir) => measureIn(dir, bytes));
}

async function measureIn(dir: string, bytes: number): Promise<Measurement> {
  writeFileSync(path.join(dir, "huge.test.ts"), fixture(bytes));
  const args = [
    "run",
    "--root",
    dir,
    "--jobs",
    "1",
    "--timeout",
    "600",
    "--grace",
    "1",
    ...(EVENTS ? [] : ["--no-test-events"]),
  ];
  const { code, wallMs, runnerPeak, childPeak } = await runSampled(CLI, args, dir, SAMPLE_MS);
  const out = path.join(dir, ".shardguard");
  const size = (name: string) => {
    try {
      return statSync(path.join(out, name)).size;
    } catch {
      return 0;
    }
  };
  let status = `runner exited ${code}, no report`;
  let tailKept = false;
  try {
    const report = JSON.parse(readFileSync(path.join(out, "report.json"), "utf8")) as {
      shards: { status: string; tests: { failure?: { message: string } }[] }[];
    };
    status = report.shards[0]?.status ?? status;
    const message = report.shards[0]?.tests[0]?.failure?.message ?? "";
    tailKept = message.trimEnd().endsWith("THE-TAIL") && (bytes <= 64 * 1024 || /bytes cut; full log: /.test(message));
  } catch {
    // Reported through status.
  }
  return {
    bytes,
    wallMs,
    status,
    runnerPeak,
    childPeak,
    reports: { junit: size("junit.xml"), json: size("report.json"), ctrf: size("ctrf.json") },
    tailKept,
    dir,
  };
}

const mib = (bytes: number) => (bytes / MiB).toFixed(1);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

function row(label: string, m: Measurement): string {
  return [
    label.padEnd(9),
    `${m.bytes >= MiB ? `${mib(m.bytes)} MiB` : kib(m.bytes)} message`.padStart(18),
    `${(m.wallMs / 1000).toFixed(2)} s`.padStart(8),
    `runner peak ${mib(m.runnerPeak)} MiB`.padStart(23),
    `child peak ${mib(m.childPeak)} MiB`.padStart(22),
    `reports ${kib(m.reports.junit)} / ${kib(m.reports.json)} / ${kib(m.reports.ctrf)}`,
    m.status,
  ].join("  ");
}

await comparePeaks({
  title:
    `shardguard failure-rss bench: one test throwing a ${mib(BYTES)} MiB message, events ` +
    `${EVENTS ? "on" : "off"}; limit ${LIMIT_MIB} MiB runner peak RSS`,
  baselineBytes: BASELINE_BYTES,
  bytes: BYTES,
  limitMib: LIMIT_MIB,
  keep: KEEP,
  measure,
  row,
  check: (label, m) => {
    const found: string[] = [];
    if (m.status !== "failed") found.push(`${label} shard is ${m.status}, not failed`);
    for (const [name, bytes] of Object.entries(m.reports))
      if (bytes > REPORT_LIMIT) found.push(`${label} ${name} is ${mib(bytes)} MiB`);
    if (!m.tailKept) found.push(`${label} report.json lost the message's tail or does not name the log`);
    return found;
  },
});
