/**
 * Test helpers that run the real `shardguard` CLI as a child process on
 * fixture suites written into temp directories.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { RunReport } from "../../runner/results/report-model.ts";
import { RunReportSchema } from "../../runner/results/report-model.ts";

export const REPO = path.resolve(import.meta.dir, "..", "..");
export const CLI = path.join(REPO, "runner", "cli-entry.ts");
export const FIXTURES = path.join(REPO, "test", "fixtures", "suites");
/** Adversarial fixtures run all at once by test/hostile.test.ts. */
export const HOSTILE_FIXTURES = path.join(REPO, "test", "fixtures", "hostile");

/** Temp dirs made by {@link makeSuite} and not yet removed. */
const madeDirs: string[] = [];

/**
 * Removes every dir {@link makeSuite} made so far. Test files call it from a
 * top-level `afterAll` (bun test emits no process "exit" event to hook).
 */
export function removeSuites(): void {
  for (const dir of madeDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Creates a temp dir holding `files` (relative path → contents); see {@link removeSuites}. */
export function makeSuite(files: Record<string, string>, prefix = "sg-suite-"): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  for (const [rel, text] of Object.entries(files)) {
    const full = path.join(dir, rel);
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
  return dir;
}

/** Creates an empty temp dir named `prefix…` that the caller removes (a server's data dir, stopped first). */
export function ownedTempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Creates an empty temp dir named `prefix…`, removed with the others by {@link removeSuites}. */
export function tempDir(prefix = "sg-tmp-"): string {
  return makeSuite({}, prefix);
}

/**
 * Reads fixture files `<folder>/<name>.fixture.ts` and returns them as
 * `<name>.test.ts` entries for {@link makeSuite}. Fixtures are stored under
 * another suffix so this repository's own `bun test` never runs them.
 * Without `names`, every `*.fixture.ts` directly in `folder` is taken.
 */
export function fixtureFilesIn(folder: string, names?: readonly string[]): Record<string, string> {
  const chosen =
    names ??
    readdirSync(folder)
      .filter((f) => f.endsWith(".fixture.ts"))
      .map((f) => f.slice(0, -".fixture.ts".length))
      .sort();
  const out: Record<string, string> = {};
  for (const name of chosen) out[`${name}.test.ts`] = readFileSync(path.join(folder, `${name}.fixture.ts`), "utf8");
  return out;
}

/** {@link fixtureFilesIn} for `test/fixtures/suites`. */
export function fixtureFiles(...names: string[]): Record<string, string> {
  return fixtureFilesIn(FIXTURES, names);
}

/** Outcome of one CLI process. `ms` is wall time on a monotonic clock. */
export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Options of {@link runCli}. */
export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Called once the CLI has printed a line matching this, with the child. */
  onLine?: { match: RegExp; act: (pid: number) => void };
  /** Hard limit for the CLI process, ms; the test fails past it. */
  limitMs?: number;
  /** The program run by Bun instead of runner/cli-entry.ts (the `bin` launcher, the compiled CLI). */
  entry?: string;
}

/**
 * `env` without the variables that turn GitHub Actions output on, so tests
 * that read the console see the same lines on a CI runner as anywhere else;
 * a test that wants them passes them in `options.env`.
 */
export function withoutCiVariables(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env))
    if (v !== undefined && !/^GITHUB_(ACTIONS|STEP_SUMMARY|WORKSPACE)$/.test(k)) out[k] = v;
  return out;
}

/** Runs `bun runner/cli-entry.ts ...args` (or `options.entry`) and collects its output. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [options.entry ?? CLI, ...args], {
    cwd: options.cwd ?? REPO,
    env: { ...withoutCiVariables(process.env), NO_COLOR: "1", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let fired = false;
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    if (options.onLine && !fired && options.onLine.match.test(stdout)) {
      fired = true;
      options.onLine.act(child.pid!);
    }
  });
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const limit = setTimeout(() => child.kill("SIGKILL"), options.limitMs ?? 60_000);
  return new Promise((resolve) => {
    child.on("close", (code, signal) => {
      clearTimeout(limit);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - t0 });
    });
  });
}

/** Reads and validates `<dir>/.shardguard/report.json` (or the given path). */
export function readReport(dir: string, file = path.join(dir, ".shardguard", "report.json")): RunReport {
  return RunReportSchema.parse(JSON.parse(readFileSync(file, "utf8")));
}

/** The report's shard for a file (relative path). */
export function shardOf(report: RunReport, file: string) {
  const shard = report.shards.find((s) => s.files.includes(file));
  if (!shard) throw new Error(`no shard for ${file} in report`);
  return shard;
}

/**
 * Pids of live processes whose environment carries `SHARDGUARD_RUN=<runId>:`,
 * i.e. descendants of this run's shards (Linux /proc). Zombies are ignored.
 */
export function survivors(runId: string): number[] {
  return processesWithEnvEntry(`SHARDGUARD_RUN=${runId}:`);
}

/**
 * The run id of a live runner, read from the cookie (`SHARDGUARD_RUN=<run id>:<shard>`) in the
 * environment of its shard children (Linux /proc): known as soon as a shard runs, unlike
 * report.json, whose first write waits for the first wave's handshakes. Null when no child has one.
 */
export function runIdOfRunner(runnerPid: number): string | null {
  let children: string[];
  try {
    children = readFileSync(`/proc/${runnerPid}/task/${runnerPid}/children`, "utf8").trim().split(/\s+/);
  } catch {
    return null;
  }
  for (const child of children) {
    try {
      const entry = readFileSync(`/proc/${child}/environ`, "utf8")
        .split("\0")
        .find((kv) => kv.startsWith("SHARDGUARD_RUN="));
      const value = entry?.slice("SHARDGUARD_RUN=".length);
      if (value?.includes(":")) return value.slice(0, value.lastIndexOf(":"));
    } catch {
      // The child ended while we looked.
    }
  }
  return null;
}

/**
 * Pids of live, non-zombie processes with an environment entry starting with
 * `prefix` (e.g. `NAME=value`), read from Linux /proc. Independent of the
 * runner's own sweep code, so tests can check and clean up after it.
 */
export function processesWithEnvEntry(prefix: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (/\) Z /.test(stat)) continue;
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8");
      if (environ.split("\0").some((kv) => kv.startsWith(prefix))) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Waits until `check()` is true or `ms` passes; returns the last value. */
export async function waitFor<T>(check: () => T, ms: number, stepMs = 50): Promise<T> {
  const end = performance.now() + ms;
  let value = check();
  while (!value && performance.now() < end) {
    await Bun.sleep(stepMs);
    value = check();
  }
  return value;
}
