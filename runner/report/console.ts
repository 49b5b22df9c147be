/**
 * Console reporter: plain lines, one per event that matters, so a CI log
 * reads as a timeline. Consumes the result model only.
 */
import { open } from "node:fs/promises";
import type { PlannedShard } from "../plan/plan.ts";
import type { RunReport, ShardResult } from "../results/model.ts";
import { stripAnsi } from "./sanitize.ts";

/** Where console lines go; injectable for tests. */
export interface Out {
  line(text: string): void;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** `[2/7] START test/x.test.ts (timeout 1800s) log: …` */
export function startLine(shard: PlannedShard, total: number, timeoutMs: number, logPath: string): string {
  return `[${shard.index}/${total}] START ${shard.files.join(" ")} (timeout ${secs(timeoutMs)}) log: ${logPath}`;
}

/** `[2/7] TIMED-OUT 6.0s test/x.test.ts: killed after 6 s wall-clock timeout` */
export function endLine(result: ShardResult, total: number): string {
  return `[${result.index}/${total}] ${result.status.toUpperCase()} ${secs(result.durationMs)} ${result.files.join(" ")}: ${result.reason}`;
}

/**
 * Reads at most `maxBytes` from the end of a log file, ANSI stripped, cut to
 * whole lines. Returns "" when the file cannot be read: a lost tail must never
 * turn a verdict into an exception.
 */
export async function logTail(logPath: string, maxBytes = 4096, maxLines = 30): Promise<string> {
  try {
    const handle = await open(logPath, "r");
    try {
      const { size } = await handle.stat();
      const start = Math.max(0, size - maxBytes);
      const buffer = Buffer.alloc(size - start);
      await handle.read(buffer, 0, buffer.length, start);
      let text = stripAnsi(buffer.toString("utf8"));
      if (start > 0) text = text.slice(text.indexOf("\n") + 1);
      return text.split("\n").slice(-maxLines).join("\n").trimEnd();
    } finally {
      await handle.close();
    }
  } catch {
    return "";
  }
}

/** The closing summary: counts, one line per non-passing shard, report paths. */
export function summaryLines(report: RunReport, paths: { junit: string; json: string; ctrf: string }): string[] {
  const s = report.summary;
  const shardCounts = (["passed", "failed", "timed-out", "crashed", "never-started", "skipped-by-diff"] as const)
    .filter((k) => s.shards[k] > 0)
    .map((k) => `${s.shards[k]} ${k}`)
    .join(", ");
  const testCounts = (["passed", "failed", "skipped", "todo", "timed-out", "crashed", "never-started", "skipped-by-diff"] as const)
    .filter((k) => s.tests[k] > 0)
    .map((k) => `${s.tests[k]} ${k}`)
    .join(", ");
  const lines = [
    "",
    `shardguard: ${s.shards.total} shards: ${shardCounts || "none"}`,
    `shardguard: ${s.tests.total} tests: ${testCounts || "none"}${s.tests.flaky ? ` (${s.tests.flaky} flaky)` : ""}`,
  ];
  for (const shard of report.shards) {
    lines.push(`  ${shard.status.padEnd(15)} ${secs(shard.durationMs).padStart(7)}  ${shard.files.join(" ")}`);
  }
  lines.push(`shardguard: JUnit ${paths.junit}`, `shardguard: JSON  ${paths.json}`, `shardguard: CTRF  ${paths.ctrf}`);
  if (report.cancelledBy) lines.push(`shardguard: cancelled by ${report.cancelledBy}; exit ${report.exitCode}`);
  else lines.push(`shardguard: exit ${report.exitCode}`);
  return lines;
}
