#!/usr/bin/env bun
/**
 * Stress check of the inspector event channel: how many short shards lose
 * ALL their inspector events. Each of N one-file shards holds one test that
 * fails its first attempt and passes the retry (`-- --retry 1`), so a shard
 * whose events arrived reports the test as flaky with one retry, and one
 * whose events were lost reports a plain pass (Bun's JUnit has no retries).
 * Counted per shard from the run's own files: an empty or missing event
 * journal (`logs/shard-<n>-*.events.jsonl`), and a test not flagged flaky
 * in report.json. Statuses must all be `passed` either way (exit 1 if not).
 *
 * Usage: bun bench/event-loss.ts [--shards 100] [--jobs 4] [--runs 1] [--keep]
 * Prints one line per run and a total. Exit 0 unless a status was wrong.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { intOption } from "./peak-rss.ts";

const opt = intOption;
const SHARDS = opt("shards", 100);
const JOBS = opt("jobs", 2 * os.cpus().length);
const RUNS = opt("runs", 1);
const KEEP = process.argv.includes("--keep");
const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-event-loss-"));
mkdirSync(path.join(dir, "t"));
for (let i = 0; i < SHARDS; i++) {
  writeFileSync(
    path.join(dir, "t", `f${String(i).padStart(3, "0")}.test.ts`),
    `import { expect, test } from "bun:test";\nlet attempt = 0;\ntest("flaky ${i}", () => { attempt += 1; ` +
      `expect(attempt).toBe(2); });\n`,
  );
}

interface ReportShape {
  shards: { index: number; status: string; tests: { status: string; flaky: boolean; retries: number }[] }[];
}

let totalNoEvents = 0;
let totalNotFlaky = 0;
let wrongStatus = 0;
for (let run = 0; run < RUNS; run++) {
  const out = path.join(dir, `.sg-${run}`);
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [CLI, "run", "--root", dir, "--out", out, "--jobs", String(JOBS), "t", "--", "--retry", "1"],
    {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    },
  );
  const ms = performance.now() - t0;
  const report = JSON.parse(readFileSync(path.join(out, "report.json"), "utf8")) as ReportShape;
  const runDir = path.join(out, "runs", readdirSync(path.join(out, "runs"))[0]!);
  const logs = path.join(runDir, "logs");
  const journals = new Map<number, number>();
  for (const name of readdirSync(logs)) {
    const m = /^shard-(\d+)-.*\.events\.jsonl$/.exec(name);
    if (m) journals.set(Number(m[1]), statSync(path.join(logs, name)).size);
  }
  let noEvents = 0;
  let notFlaky = 0;
  const lost: number[] = [];
  for (const shard of report.shards) {
    if (shard.status !== "passed") wrongStatus += 1;
    if ((journals.get(shard.index) ?? 0) === 0) {
      noEvents += 1;
      lost.push(shard.index);
    }
    if (!shard.tests.every((t) => t.flaky && t.retries === 1)) notFlaky += 1;
  }
  totalNoEvents += noEvents;
  totalNotFlaky += notFlaky;
  console.log(
    `run ${run + 1}: exit ${r.status}, ${(ms / 1000).toFixed(2)} s, ${report.shards.length} shards, ${noEvents} ` +
      `without events${lost.length ? ` (${lost.join(", ")})` : ""}, ${notFlaky} without the retry`,
  );
  if (r.status !== 0) process.stderr.write(r.stderr.slice(-2000));
}
console.log(
  `total: ${totalNoEvents} of ${SHARDS * RUNS} shards without events, ${totalNotFlaky} without the retry, ` +
    `${wrongStatus} with a wrong status (jobs ${JOBS}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")})`,
);
if (KEEP) console.log(`kept ${dir}`);
else rmSync(dir, { recursive: true, force: true });
process.exitCode = wrongStatus > 0 ? 1 : 0;
