/**
 * The run: plan in, reports out. Orchestrates the job pool, the console
 * reporter and the report writers; spawning and killing stay in
 * exec/process.ts, verdicts in results/verdict.ts.
 */
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import path from "node:path";
import type { RunSettings } from "../config/schema.ts";
import { socketDirFor } from "../events/socket-dir.ts";
import { runPool } from "../exec/pool.ts";
import { sweepCookie, sweepStaleRuns, type Escapee, type ShardProcess } from "../exec/process.ts";
import { startGuardian, type Guardian } from "../exec/guardian.ts";
import { filtersByName, SHARD_ENV } from "../exec/command.ts";
import { runShard, type RunningShard } from "../exec/shard.ts";
import type { Plan, PlannedShard } from "../plan/plan.ts";
import { orderByTimings } from "../plan/timings.ts";
import { splitKilledBatch } from "./redispatch.ts";
import { updateTimingsFile } from "./timings-update.ts";
import { EXIT, REPORT_SCHEMA_VERSION, summarize, SUCCESSFUL_SHARD_STATUSES, type RunReport, type ShardResult } from "../results/model.ts";
import { neverStarted, supervisionFailed } from "../results/verdict.ts";
import { TOOL_VERSION } from "../util/version.ts";
import { writeFileAtomic } from "../util/atomic.ts";
import { endLine, logTail, plural, startLine, summaryLines, type Out } from "../report/console.ts";
import { renderCtrf } from "../report/ctrf.ts";
import { renderJson } from "../report/json.ts";
import { renderJUnit } from "../report/junit.ts";
import { prepareRunDirs } from "./run-dirs.ts";
import { redactReport, redactShard } from "../results/redact.ts";
import type { ProgressSource } from "../report/progress.ts";

/**
 * Minimum time between two interim report writes, ms. Reports on disk are
 * then at most this much behind the run, and always valid.
 */
export const INTERIM_WRITE_GAP_MS = 200;


/** Inputs of a run. */
export interface RunInputs {
  settings: RunSettings;
  plan: Plan;
  /** Version string of the Bun that runs the shards (from preflight). */
  bunVersion: string;
  /** Environment given to every shard child. */
  env: Record<string, string | undefined>;
  out: Out;
  /** Per-shard environment additions (presets). */
  shardEnv?: (shard: PlannedShard) => Record<string, string>;
  /** Shards decided before the run (e.g. skipped-by-diff); they are not spawned. */
  predecided?: ShardResult[];
  /** Called once every shard has ended, before the summary is printed (stops live progress). */
  beforeSummary?: () => void;
  /** Applied to every report before it is written (secret values → `[redacted:NAME]`). */
  redact?: (text: string) => string;
  /** The preset that planned this run, recorded in the report. */
  preset?: RunReport["preset"];
  /** Recorded per-file durations (ms, paths relative to root): shards start longest first. */
  timings?: ReadonlyMap<string, number>;
}

/** Result of a finished run. */
export interface RunResult {
  exitCode: number;
  report: RunReport;
}

/** Makes a sortable, unique run id: `20261130T154226Z-1a2b3c`. */
export function newRunId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")}-${randomBytes(3).toString("hex")}`;
}

/**
 * One run of a plan. Call {@link Run.start} once; {@link Run.cancel} from a
 * signal handler stops it (no new shard starts, running groups get SIGTERM
 * then SIGKILL after the grace period); a second cancel kills at once.
 */
export class Run {
  readonly runId = newRunId();
  private cancelledBy: "SIGINT" | "SIGTERM" | null = null;
  private readonly live = new Set<ShardProcess>();
  readonly running = new Map<number, RunningShard>();
  private readonly results = new Map<number, ShardResult>();
  private readonly startedAt = new Date();
  private readonly t0 = performance.now();
  /** Report writes run one after another, so an older snapshot never lands last. */
  private writing: Promise<unknown> = Promise.resolve();
  private queuedInterim: Promise<RunReport> | null = null;
  private lastInterimAt = -Infinity;
  /** How long the last report write took, ms (render and disk). */
  private lastWriteMs = 0;
  private finalRequested = false;
  private runDir: string | null = null;
  /** Set by the report writer: a -t filter that matched no test anywhere (exit 1). */
  private filterMatchedNothing = false;
  private readonly sweeps: { staleRuns: Escapee[]; endOfRun: Escapee[] } = { staleRuns: [], endOfRun: [] };
  /** Shards added during the run: never-started files of killed batched shards, one file each. */
  private readonly redispatched: PlannedShard[] = [];

  /** Every shard of the run: the plan's, then the re-dispatched ones. */
  private allShards(): PlannedShard[] {
    return this.redispatched.length === 0 ? this.inputs.plan.shards : [...this.inputs.plan.shards, ...this.redispatched];
  }

  constructor(private readonly inputs: RunInputs) {}

  /** Live view for progress displays: counts and the running shards with their test in flight. */
  progressSource(): ProgressSource {
    return {
      total: this.inputs.plan.shards.length + this.redispatched.length,
      done: () => this.results.size,
      running: () =>
        [...this.running.values()].map((r) => ({
          index: r.shard.index,
          files: r.shard.files,
          elapsedMs: () => r.process.elapsedMs(),
          stopping: () => r.process.state === "terminating" || r.process.state === "killing",
          inFlight: () => {
            const test = r.model?.running();
            if (!test) return null;
            return { name: test.fullName, forMs: test.startedAtMs === undefined ? 0 : performance.now() - test.startedAtMs };
          },
        })),
    };
  }

  /** Requests cancellation; the second request SIGKILLs every running group at once. */
  cancel(signal: "SIGINT" | "SIGTERM"): void {
    if (this.cancelledBy) {
      for (const proc of this.live) proc.killNow("cancel");
      return;
    }
    this.cancelledBy = signal;
    this.inputs.out.line(`shardguard: ${signal} received: starting no new shard, stopping ${this.live.size} running (again to kill at once)`);
    for (const proc of this.live) proc.terminate("cancel");
  }

  /** Runs every planned shard and writes both reports. Never throws for what a child does. */
  async start(): Promise<RunResult> {
    const { settings, plan, out } = this.inputs;
    const { runDir, logDir, junitDir } = await prepareRunDirs(settings.out, this.runId);
    this.runDir = runDir;
    let socketDir: string | null = null;
    if (settings.testEvents) {
      try {
        socketDir = socketDirFor(runDir);
      } catch (error) {
        // No private place for sockets: run without events rather than not at all.
        out.line(`shardguard: WARNING no per-test events for this run: ${(error as Error).message}`);
      }
    }
    try {
      return await this.runAll(logDir, junitDir, socketDir);
    } finally {
      if (socketDir && !socketDir.startsWith(runDir)) await rm(socketDir, { recursive: true, force: true });
    }
  }

  /** The body of {@link start} once the run directories exist. */
  private async runAll(logDir: string, junitDir: string, socketDir: string | null): Promise<RunResult> {
    const { settings, plan, out } = this.inputs;
    for (const done of this.inputs.predecided ?? []) this.results.set(done.index, done);

    const toRun = plan.shards.filter((s) => !this.results.has(s.index));
    const total = plan.shards.length;
    out.line(
      `shardguard: run ${this.runId}: ${plural(total, "shard")} (${plural(plan.included.size, "file")}), ` +
        `${toRun.length} to run, jobs ${settings.jobs}, timeout ${settings.timeoutMs / 1000}s, grace ${settings.graceMs / 1000}s`,
    );
    this.sweeps.staleRuns = sweepStaleRuns(`${SHARD_ENV.cookie}=`, SHARD_ENV.runnerPid);
    if (this.sweeps.staleRuns.length > 0) {
      out.line(`shardguard: killed ${plural(this.sweeps.staleRuns.length, "process")} left by earlier runs whose runner died: ${describe(this.sweeps.staleRuns, this.inputs.redact)}`);
    }
    await this.writeReports(false);
    // Kills what this run leaves behind if the runner itself is SIGKILLed.
    const guardian = startGuardian(`${SHARD_ENV.cookie}=${this.runId}:`);
    try {
      return await this.runShards(logDir, junitDir, socketDir, guardian);
    } finally {
      // Still held only when something threw: sweep now rather than never.
      guardian.abandon();
    }
  }

  /** The pool, the end-of-run sweep and the final report; releases the guardian once the sweep has run. */
  private async runShards(logDir: string, junitDir: string, socketDir: string | null, guardian: Guardian): Promise<RunResult> {
    const { settings, plan, out } = this.inputs;
    const planned = plan.shards.filter((s) => !this.results.has(s.index));
    const toRun = this.inputs.timings ? orderByTimings(planned, this.inputs.timings) : planned;
    const shardTotal = () => plan.shards.length + this.redispatched.length;
    const ctx = {
      runId: this.runId,
      root: settings.root,
      bun: settings.bun,
      bunArgs: settings.bunArgs,
      timeoutMs: settings.timeoutMs,
      graceMs: settings.graceMs,
      logDir,
      junitDir,
      socketDir,
      env: this.inputs.env,
      ...(this.inputs.shardEnv ? { shardEnv: this.inputs.shardEnv } : {}),
    };
    await runPool(
      toRun,
      settings.jobs,
      async (shard, enqueue) => {
        const { result, filesNotStarted } = await runShard(
          ctx,
          shard,
          {
            onStart: (running) => {
              this.running.set(shard.index, running);
              out.line(startLine(shard, shardTotal(), settings.timeoutMs, running.logPath));
              // So a runner killed right now leaves reports naming this shard as running.
              void this.writeReports(false);
            },
            onWarning: (s, message) => out.line(`[${s.index}/${shardTotal()}] WARNING ${message}`),
          },
          (proc) => {
            this.live.add(proc);
            // A cancel that raced with the spawn still reaches this shard.
            if (this.cancelledBy) proc.terminate("cancel");
            return () => this.live.delete(proc);
          },
          () => this.cancelledBy,
        ).catch((error: unknown) => {
          // Our own failure (a full disk for the journal, a bad socket path)
          // must cost this shard, not the run: kill what it started, say why.
          this.running.get(shard.index)?.process?.killNow("cancel");
          return { result: supervisionFailed(shard, (error as Error).message ?? String(error)), filesNotStarted: [] };
        });
        for (const again of this.redispatch(shard, result, filesNotStarted)) enqueue(again);
        this.running.delete(shard.index);
        this.results.set(shard.index, result);
        // Redact before the console lines cut anything, so no cut can split a secret.
        const shown = this.inputs.redact ? redactShard(result, this.inputs.redact) : result;
        out.line(endLine(shown, shardTotal()));
        if (shown.leftovers.length > 0) {
          const left = shown.leftovers.filter((e) => e.leftGroup).length;
          out.line(
            `[${shard.index}/${shardTotal()}] killed ${plural(shown.leftovers.length, "leftover process")} still running after the shard's tests ended` +
              `${left > 0 ? ` (${left} had left the process group)` : ""}: ${describe(shown.leftovers)}`,
          );
        }
        if (!SUCCESSFUL_SHARD_STATUSES.has(result.status) && result.logPath) {
          const tail = await logTail(result.logPath);
          if (tail) out.line(tail.split("\n").map((l) => `    | ${l}`).join("\n"));
        }
        // Not awaited: the next shard need not wait for the disk; the final
        // write is queued behind this one.
        void this.writeReports(false);
        return result;
      },
      () => this.cancelledBy !== null,
    );

    // Anything of this run still alive (a shard's sweep raced a fork) dies now.
    this.sweeps.endOfRun = sweepCookie(`${SHARD_ENV.cookie}=${this.runId}:`, "prefix");
    if (this.sweeps.endOfRun.length > 0) {
      out.line(`shardguard: killed ${plural(this.sweeps.endOfRun.length, "leftover process")} of this run: ${describe(this.sweeps.endOfRun, this.inputs.redact)}`);
    }
    await guardian.release();
    const report = await this.writeReports(true);
    if (settings.updateTimings) await updateTimingsFile(settings.updateTimings, report.shards, out);
    this.inputs.beforeSummary?.();
    if (this.filterMatchedNothing) out.line("shardguard: the -t filter matched no test in any file: nothing was executed");
    const shownReport = this.inputs.redact ? redactReport(report, this.inputs.redact) : report;
    for (const line of summaryLines(shownReport, { junit: settings.junit, json: settings.json, ctrf: settings.ctrf })) out.line(line);
    return { exitCode: report.exitCode ?? EXIT.failed, report };
  }

  /** Re-dispatch of a killed batched shard's unstarted files (app/redispatch.ts); none once cancelled. */
  private redispatch(shard: PlannedShard, result: ShardResult, filesNotStarted: readonly string[]): PlannedShard[] {
    if (this.cancelledBy) return [];
    const added = splitKilledBatch(shard, result, filesNotStarted, this.inputs.plan.shards.length + this.redispatched.length + 1);
    this.redispatched.push(...added);
    return added;
  }

  /** Every shard of the run, plan order then re-dispatched: decided, or not (yet) started. */
  private shardResults(final: boolean): ShardResult[] {
    return this.allShards().map((shard) => {
      const done = this.results.get(shard.index);
      if (done) return done;
      const reason = this.cancelledBy
        ? `run cancelled (${this.cancelledBy}) before this shard started`
        : final
          ? "never started"
          : this.running.has(shard.index)
            ? "still running when this report was written"
            : "queued: not started when this report was written";
      return neverStarted(shard, reason);
    });
  }

  /**
   * Writes the JUnit, JSON and CTRF reports atomically (the run's own copies,
   * then the stable paths). Called at start, when shards start and end, and
   * at the end, so the files on disk are valid and honest whenever the runner dies.
   */
  private writeReports(final: boolean): Promise<RunReport> {
    // Interim writes coalesce and are spaced at least INTERIM_WRITE_GAP_MS
    // apart: later requests share the one queued write, which renders the
    // state when it runs and so includes every shard that ended meanwhile.
    // Rendering is O(shards), so writing after every one of many short shards
    // was quadratic and slowed the event loop that notices child exits
    // (bench/events-overhead.ts). The final write is never delayed.
    if (!final && this.queuedInterim) return this.queuedInterim;
    const next = this.writing.then(async () => {
      if (!final) {
        // Rendering is O(tests): a large report spaces its interim writes
        // further apart, so they never take more than ~10% of the runner's time.
        const gap = Math.max(INTERIM_WRITE_GAP_MS, 10 * this.lastWriteMs);
        const wait = this.lastInterimAt + gap - performance.now();
        if (wait > 0 && !this.finalRequested) await new Promise((r) => setTimeout(r, wait));
        this.queuedInterim = null;
        this.lastInterimAt = performance.now();
      }
      return this.writeReportsNow(final);
    });
    if (!final) this.queuedInterim = next;
    else this.finalRequested = true;
    this.writing = next.catch(() => {});
    return next;
  }

  private async writeReportsNow(final: boolean): Promise<RunReport> {
    const began = performance.now();
    try {
      return await this.renderAndWrite(final);
    } finally {
      this.lastWriteMs = performance.now() - began;
    }
  }

  private async renderAndWrite(final: boolean): Promise<RunReport> {
    const { settings } = this.inputs;
    const shards = this.shardResults(final);
    const summary = summarize(shards);
    // With -t, a file without a matching test is fine, but a run in which
    // the filter matched nothing anywhere executed nothing: never a pass
    // (Bun itself exits 1 with "regex matched 0 tests").
    const executed = summary.tests.passed + summary.tests.failed + summary.tests["timed-out"] + summary.tests.crashed;
    this.filterMatchedNothing = filtersByName(settings.bunArgs) && executed === 0 && shards.some((s) => s.status === "passed");
    const allGood = shards.every((s) => SUCCESSFUL_SHARD_STATUSES.has(s.status)) && !this.filterMatchedNothing;
    const exitCode = !final
      ? null
      : this.cancelledBy === "SIGINT"
        ? EXIT.sigint
        : this.cancelledBy === "SIGTERM"
          ? EXIT.sigterm
          : allGood
            ? EXIT.ok
            : EXIT.failed;
    const report: RunReport = {
      schemaVersion: REPORT_SCHEMA_VERSION,
      runId: this.runId,
      completed: final && this.cancelledBy === null,
      cancelledBy: this.cancelledBy,
      startedAt: this.startedAt.toISOString(),
      finishedAt: final ? new Date().toISOString() : null,
      durationMs: performance.now() - this.t0,
      exitCode,
      root: settings.root,
      tool: { name: "shardguard", version: TOOL_VERSION },
      bun: { version: this.inputs.bunVersion, path: settings.bun },
      settings: {
        jobs: settings.jobs,
        timeoutMs: settings.timeoutMs,
        graceMs: settings.graceMs,
        filesPerShard: settings.filesPerShard,
        bunArgs: [...settings.bunArgs],
      },
      summary,
      preset: this.inputs.preset ?? null,
      sweeps: { staleRuns: strip(this.sweeps.staleRuns), endOfRun: strip(this.sweeps.endOfRun) },
      shards,
    };
    try {
      // Reports leave the machine (CI artifacts); logs stay raw, mode 0600.
      const safe = this.inputs.redact ? redactReport(report, this.inputs.redact) : report;
      const xml = renderJUnit(safe);
      const json = renderJson(safe);
      const ctrf = renderCtrf(safe);
      // The run's own copy first, then the stable paths (last finisher wins).
      if (this.runDir) {
        await writeFileAtomic(path.join(this.runDir, "junit.xml"), xml);
        await writeFileAtomic(path.join(this.runDir, "report.json"), json);
        await writeFileAtomic(path.join(this.runDir, "ctrf.json"), ctrf);
      }
      await writeFileAtomic(settings.junit, xml);
      await writeFileAtomic(settings.json, json);
      await writeFileAtomic(settings.ctrf, ctrf);
    } catch (error) {
      this.inputs.out.line(`shardguard: could not write the reports: ${(error as Error).message}`);
    }
    return report;
  }
}

const strip = (list: Escapee[]) => list.map(({ pid, command, leftGroup }) => ({ pid, command, leftGroup }));
/** `pid command; …` for a console line: redacted first, then cut, so a cut never splits a secret. */
const describe = (list: readonly { pid: number; command: string }[], redact: (text: string) => string = (t) => t) =>
  list.map((e) => `${e.pid} ${redact(e.command).slice(0, 60)}`).join("; ");
