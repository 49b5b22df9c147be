/**
 * Peak memory of a shardguard run, sampled from outside: the runner's own
 * peak (VmHWM, which exec resets, so counting starts once the pid runs the
 * CLI) and the largest peak of any direct child. Shared by the RSS benchmarks.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** Bytes in a mebibyte. */
export const MiB = 1024 * 1024;

/** "20M" → 20971520, "1G", "512K"; plain integers are bytes. @throws Error naming what is accepted */
export function parseBytes(text: string): number {
  const m = /^(\d+)([KMG]?)$/i.exec(text.trim());
  if (!m)
    throw new Error(`--bytes needs a whole number with an optional K, M or G suffix, got ${JSON.stringify(text)}`);
  const scale = { "": 1, K: 1024, M: MiB, G: 1024 * MiB }[m[2]!.toUpperCase() as "" | "K" | "M" | "G"];
  const value = Number(m[1]) * scale;
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`--bytes must be at least 1, got ${JSON.stringify(text)}`);
  return value;
}

/** The value after `--name` on this process's command line. */
export function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/**
 * The positive whole number after `--name`, or `fallback` when absent.
 *
 * @throws Error naming the flag when the value is not a positive integer
 */
export function intOption(name: string, fallback: number): number {
  const raw = option(name);
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive integer`);
  return value;
}

/**
 * The options every RSS benchmark takes: `--limit-mib` (default 150) and
 * `--keep`. @throws Error when the limit is not positive, or off Linux
 * (the benchmarks read /proc)
 */
export function rssBenchOptions(script: string): { limitMib: number; keep: boolean } {
  const limitMib = Number(option("limit-mib") ?? 150);
  if (!(limitMib > 0)) throw new Error("--limit-mib needs a positive number");
  if (process.platform !== "linux") throw new Error(`${script} reads /proc and runs on Linux only`);
  return { limitMib, keep: process.argv.includes("--keep") };
}

/** What one sampled run measured; memory in bytes, times in ms. */
export interface PeakSample {
  code: number | null;
  wallMs: number;
  runnerPeak: number;
  childPeak: number;
}

/** VmHWM and VmRSS of `pid` in bytes, or null when it is gone. */
export function memoryOf(pid: number): { hwm: number; rss: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
    const hwm = kb("VmHWM");
    const rss = kb("VmRSS");
    return Number.isNaN(hwm) || Number.isNaN(rss) ? null : { hwm, rss };
  } catch {
    return null;
  }
}

/** Direct children of `pid` (its main thread's), empty when it is gone. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Runs `bun CLI ...args` in `cwd` (output discarded) and samples memory
 * every `sampleMs` until it exits.
 *
 * @throws Error when the pid was never seen running the CLI (nothing measured)
 */
export async function runSampled(
  cli: string,
  args: readonly string[],
  cwd: string,
  sampleMs: number,
): Promise<PeakSample> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [cli, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: "ignore",
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const pid = child.pid!;
  let runnerPeak = 0;
  let childPeak = 0;
  let verified = false;
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    if (!verified) {
      // Count only once this pid runs the CLI: between fork and exec it is
      // still a copy of this process (exec resets VmHWM).
      let cmdline: string[] = [];
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      } catch {
        // Gone already.
      }
      verified = cmdline[1] === cli;
    }
    const mem = verified ? memoryOf(pid) : null;
    if (mem) runnerPeak = Math.max(runnerPeak, mem.hwm, mem.rss);
    for (const c of childrenOf(pid)) {
      const m = memoryOf(c);
      if (m) childPeak = Math.max(childPeak, m.hwm, m.rss);
    }
    await Bun.sleep(sampleMs);
  }
  const wallMs = performance.now() - t0;
  const code = await exited;
  if (!verified) throw new Error(`never saw pid ${pid} run ${cli}; nothing was measured`);
  return { code, wallMs, runnerPeak, childPeak };
}

/**
 * Runs `body` in a new temp directory named `prefix…`; on failure the
 * directory is removed unless `keep` (the caller removes it on success,
 * after reading what it needs).
 */
export async function inTempDir<T>(prefix: string, keep: boolean, body: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    return await body(dir);
  } catch (error) {
    if (!keep) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** What {@link comparePeaks} needs of one measurement. */
export interface PeakMeasurement {
  runnerPeak: number;
  /** Temp dir of the run, removed unless kept. */
  dir: string;
}

/**
 * The common driver of the RSS benchmarks: prints the title, measures a
 * baseline and then the target with `measure`, prints both rows and their
 * peak ratio, checks the target's runner peak against `limitMib` plus
 * `check(label, m)` for each, removes the temp dirs (unless `keep`), and
 * ends with OK or FAIL (exit status 1).
 *
 * @param check problems of one measurement, each a phrase
 */
export async function comparePeaks<M extends PeakMeasurement>(o: {
  title: string;
  baselineBytes: number;
  bytes: number;
  limitMib: number;
  keep: boolean;
  measure: (bytes: number) => Promise<M>;
  row: (label: string, m: M) => string;
  check: (label: string, m: M) => string[];
}): Promise<void> {
  const mib = (n: number) => (n / MiB).toFixed(1);
  console.log(o.title);
  const baseline = await o.measure(o.baselineBytes);
  console.log(o.row("baseline", baseline));
  const target = await o.measure(o.bytes);
  console.log(o.row("target", target));
  console.log(
    `runner peak RSS: ${mib(target.runnerPeak)} MiB vs ` +
      `${mib(baseline.runnerPeak)} MiB baseline (× ${(target.runnerPeak / baseline.runnerPeak).toFixed(2)})`,
  );
  const problems: string[] = [];
  if (target.runnerPeak >= o.limitMib * MiB)
    problems.push(`runner peak RSS ${mib(target.runnerPeak)} MiB ≥ ${o.limitMib} MiB`);
  problems.push(...o.check("baseline", baseline), ...o.check("target", target));
  if (o.keep) console.log(`kept: ${baseline.dir} ${target.dir}`);
  else for (const m of [baseline, target]) rmSync(m.dir, { recursive: true, force: true });
  if (problems.length > 0) {
    console.log(`FAIL: ${problems.join("; ")}`);
    process.exit(1);
  }
  console.log("OK");
}
