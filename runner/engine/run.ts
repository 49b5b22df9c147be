/**
 * The run: plan in, reports out (docs/architecture.md, "The flow of one run"). Dispatches and re-dispatches
 * shards, handles cancellation and sweeps, and tells the console and the report writer.
 */
import { BG_RUN_ID_ENV } from "./host.ts";
import { runIdFrom } from "./run-id.ts";
import { rm } from "node:fs/promises";
import type { RunSettings } from "../config/settings-schema.ts";
import { socketDirFor } from "../events/socket-dir.ts";
import { filtersByName, SHARD_ENV } from "../exec/bun-command.ts";
import { startGuardian, type Guardian } from "../exec/guardian.ts";
import { runPool } from "../exec/pool.ts";
import { sweepCookie, sweepStaleRuns, watchGroups, type Escapee, type ShardProcess } from "../exec/process.ts";
import { runShard, type CostAdapter, type RunningShard, type ShardContext, type ShardHooks } from "../exec/shard.ts";
import { ShardNotStartedError } from "../exec/shard-attempt.ts";
import { FIRST_REPORT_WAIT_MS, HandshakeGate } from "../exec/handshake-gate.ts";
import type { Plan, PlannedShard } from "../plan/plan.ts";
import { orderByTimings } from "../plan/timings.ts";
import type { ConsoleOut } from "../report/console.ts";
import { ConsoleReporter, type RunReporter } from "../report/console-reporter.ts";
import { bunCapabilities, missingFeatures, type BunCapabilities } from "../results/bun-capabilities.ts";
import type { ProgressSource } from "../report/progress.ts";
import { EXIT, REPORT_SCHEMA_VERSION, summarize } from "../results/codes.ts";
import { budgetFor, type RunBudget, runCost, unstartedReason } from "./budget.ts";
import type { RunReport, ShardResult } from "../results/report-model.ts";
import { decideRun } from "../results/run-verdict.ts";
import { neverStarted, supervisionFailed } from "../results/verdict.ts";
import { TOOL_VERSION } from "../util/version.ts";
import { redispatchBatches, splitKilledBatch } from "./redispatch.ts";
import type { ReportTargets, ReportWriter } from "./report-writer.ts";
import { prepareRunDirs, pruneRuns, RunDirsKeeper } from "./run-dirs.ts";
import { coverageSafePreload } from "../exec/coverage.ts";
import { afterFailedFinalWrite, removeStaleReports } from "./refused.ts";
import { updateTimingsFile } from "./timings-update.ts";
import { RunResources } from "./run-resources.ts";
import { shardContextFor } from "./shard-inputs.ts";
import { markQuarantined } from "./quarantine-marks.ts";

/** Inputs of a run. */
export interface RunInputs {
  settings: RunSettings;
  plan: Plan;
  /** Version string of the Bun that runs the shards (from preflight). */
  bunVersion: string;
  /** Environment given to every shard child. */
  env: Record<string, string | undefined>;
  out: ConsoleOut;
  /** Per-shard environment additions (presets). */
  shardEnv?: (shard: PlannedShard) => Record<string, string>;
  /** A preset's cost adapter: where it reads each shard's spend besides the cost file (docs/cost.md). */
  costAdapter?: CostAdapter;
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
  /**
   * Where this run's plan came from, recorded in the report: the sliced plan and this slice (`--shard`), the run it
   * reruns (`--last-failed`).
   */
  provenance?: Partial<Pick<RunReport, "plan" | "slice" | "rerunOf">>;
  /** Keys (`file > name`) of quarantined tests: marked in every report, their failures not the run's. */
  quarantine?: ReadonlySet<string>;
  /** Told the final report once built, before it is written: the history's append runs beside the writes. */
  onFinalReport?: (report: RunReport) => void;
  /** Lines the console's end prints just before its exit line (the history's, the quarantine's); awaited. */
  closingLines?: (report: RunReport) => Promise<string[]>;
  /** report.html's run history for a report (its strips, issue 36); read before the run, none without a history. */
  htmlHistory?: ReportTargets["htmlHistory"];
}

/** Result of a finished run. */
export interface RunResult {
  exitCode: number;
  report: RunReport;
}

/**
 * One run of a plan. Call {@link Run.start} once; {@link Run.cancel} stops it (SIGTERM, SIGKILL after the grace);
 * a second cancel kills at once.
 */
export class Run {
  readonly runId: string;
  private cancelledBy: "SIGINT" | "SIGTERM" | null = null;
  private readonly live = new Set<ShardProcess>();
  /** Job slots (1-based) held by running shards, for each shard's `timeline.slot`. */
  private readonly slotsTaken = new Set<number>();
  readonly running = new Map<number, RunningShard>();
  private readonly results = new Map<number, ShardResult>();
  private readonly startedAt = new Date();
  private readonly t0 = performance.now();
  private runDir: string | null = null;
  /** The child preload the shards load (exec/coverage.ts); undefined: the package's own. */
  private preload: string | undefined;
  /** From the last report built: a -t filter that matched no test anywhere (exit 1). */
  private filterMatchedNothing = false;
  private readonly console: RunReporter;
  /** What the shards' Bun can do, by its version (results/bun-capabilities.ts). */
  private readonly capabilities: BunCapabilities;
  /** What it lacks, said once on the console and kept in every report (`bun.missing`). */
  private readonly bunMissing: string[];
  /** Set once the report writer's modules are loaded (see {@link reportWriter}). */
  private writer: ReportWriter | null = null;
  private writerLoaded: Promise<ReportWriter> | null = null;
  private readonly sweeps: { staleRuns: Escapee[]; endOfRun: Escapee[] } = { staleRuns: [], endOfRun: [] };
  /** Shards added during the run: never-started files of killed batched shards, one file each. */
  private readonly redispatched: PlannedShard[] = [];
  /** Set once the first report write is asked for: from then on each shard's start writes the reports. */
  private firstWriteAsked = false;
  /** `--budget-usd` (engine/budget.ts); null without one. */
  private budget: RunBudget | null = null;

  /** Every shard of the run: the plan's, then the re-dispatched ones. */
  private allShards(): PlannedShard[] {
    return this.redispatched.length === 0
      ? this.inputs.plan.shards
      : [...this.inputs.plan.shards, ...this.redispatched];
  }

  /** Resource locks and exclusive files: the order, the gate, and what reports say of waits. */
  private readonly locks: RunResources;

  constructor(private readonly inputs: RunInputs) {
    this.runId = runIdFrom(inputs.env);
    if (inputs.env[BG_RUN_ID_ENV] !== undefined) {
      const { [BG_RUN_ID_ENV]: _bg, ...env } = inputs.env;
      this.inputs = { ...inputs, env };
    }
    this.locks = new RunResources(inputs.settings);
    this.console = new ConsoleReporter(inputs.out, inputs.redact);
    this.capabilities = bunCapabilities(inputs.bunVersion);
    this.bunMissing = missingFeatures(this.capabilities, inputs.settings.testEvents);
  }

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
            const test = r.inFlight();
            if (!test) return null;
            return {
              name: test.name,
              forMs: test.startedAtMs === undefined ? 0 : performance.now() - test.startedAtMs,
            };
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
    this.console.onCancel(signal, this.live.size);
    for (const proc of this.live) proc.terminate("cancel");
  }

  /** Runs every planned shard and writes both reports. Never throws for what a child does. */
  async start(): Promise<RunResult> {
    const { settings, out } = this.inputs;
    // Before any spawn: a runner killed before its first write must not leave an earlier run's reports in place
    // (docs/reports.md, "Reports written while the run is going").
    removeStaleReports(settings);
    const { runDir, logDir, junitDir } = await prepareRunDirs(settings.out, this.runId);
    this.runDir = runDir;
    try {
      // Out of the project's coverage (exec/coverage.ts).
      this.preload = coverageSafePreload(runDir);
    } catch (error) {
      out.line(
        `shardguard: WARNING the child preload counts toward the project's coverage in this run: ` +
          `${(error as Error).message}`,
      );
    }
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
    const { settings, plan } = this.inputs;
    for (const done of this.inputs.predecided ?? []) this.results.set(done.index, done);

    this.console.onRunStart({
      runId: this.runId,
      shards: plan.shards.length,
      files: plan.included.size,
      toRun: plan.shards.filter((s) => !this.results.has(s.index)).length,
      jobs: settings.jobs,
      timeoutMs: settings.timeoutMs,
      graceMs: settings.graceMs,
    });
    this.console.onBunMissing(this.bunMissing);
    this.sweeps.staleRuns = sweepStaleRuns(`${SHARD_ENV.cookie}=`, SHARD_ENV.runnerPid);
    this.console.onSweep("stale-runs", this.sweeps.staleRuns);
    // Kills what this run leaves behind if the runner itself is SIGKILLed.
    const guardian = startGuardian(`${SHARD_ENV.cookie}=${this.runId}:`);
    watchGroups(guardian); // Its shards' groups and cgroups too: a cleared environment has no cookie.
    try {
      return await this.runShards(logDir, junitDir, socketDir, guardian);
    } finally {
      watchGroups(null);
      // Still held only when something threw: sweep now rather than never.
      guardian.abandon();
    }
  }

  /** The pool, the end-of-run sweep and the final report; releases the guardian once the sweep has run. */
  private async runShards(
    logDir: string,
    junitDir: string,
    socketDir: string | null,
    guardian: Guardian,
  ): Promise<RunResult> {
    const { settings, plan, out } = this.inputs;
    const planned = plan.shards.filter((s) => !this.results.has(s.index));
    // exclusive shards last
    const toRun = this.locks.order(this.inputs.timings ? orderByTimings(planned, this.inputs.timings) : planned);
    const handshakes = new HandshakeGate();
    const dirs = new RunDirsKeeper(settings.out, { runDir: this.runDir!, logDir, junitDir }, this.preload, out);
    let pruning: Promise<void> = Promise.resolve();
    const { env, shardEnv, costAdapter } = this.inputs;
    const ctx = shardContextFor(
      settings,
      { runId: this.runId, env, shardEnv, costAdapter, preload: this.preload, capabilities: this.capabilities },
      { logDir, junitDir, socketDir, handshakes, ensureDirs: dirs.ensure },
    );
    this.budget = budgetFor(settings.budgetUsd, this.results, this.running);
    const unwatch = this.budget?.watch(settings.budgetKill === true, () => this.running.values());
    const pool = runPool(
      toRun,
      settings.jobs,
      (shard, enqueue, poolRelease) => this.dispatch(shard, ctx, enqueue, poolRelease),
      () => this.cancelledBy !== null || (this.budget?.reached() ?? false),
      this.locks.gate,
    );
    // The first write waits for the first wave's handshakes (exec/handshake-gate.ts): its CPU would hold them.
    // Not awaited; every later write queues behind it, so files move forward in order.
    const firstWrite = handshakes.settled(FIRST_REPORT_WAIT_MS).then(() => {
      this.firstWriteAsked = true;
      void this.writeReports(false);
      pruning = pruneRuns(settings.out, this.runId);
    });
    await pool.finally(unwatch);
    await firstWrite;

    // Anything of this run still alive (a shard's sweep raced a fork) dies now.
    this.sweeps.endOfRun = sweepCookie(`${SHARD_ENV.cookie}=${this.runId}:`, "prefix");
    this.console.onSweep("end-of-run", this.sweeps.endOfRun);
    // The guardian has nothing left to guard once the end-of-run sweep ran; its exit is awaited beside the write.
    const released = guardian.release();
    dirs.noteLostLogs(this.results);
    let report = await this.writeReports(true);
    await released;
    const writeError = this.writer?.finalWriteError ?? null;
    if (writeError !== null) report = afterFailedFinalWrite(report, settings, out);
    await pruning;
    if (settings.updateTimings) await updateTimingsFile(settings.updateTimings, report.shards, out);
    const closing = await (this.inputs.closingLines?.(report) ?? Promise.resolve([]));
    this.inputs.beforeSummary?.();
    // Never names a file this run did not write.
    const paths =
      writeError === null
        ? { junit: settings.junit, json: settings.json, ctrf: settings.ctrf, html: settings.html }
        : null;
    this.console.onRunEnd(report, paths, this.filterMatchedNothing, this.writer?.finalRunCopy ?? null, closing);
    return { exitCode: report.exitCode ?? EXIT.failed, report };
  }

  /** One shard, from the pool's start (its resources free) to its verdict on the console, in steps. */
  private async dispatch(
    shard: PlannedShard,
    ctx: ShardContext,
    enqueue: (more: PlannedShard) => void,
    poolRelease: () => void,
  ): Promise<ShardResult> {
    // 1. The job slot this shard holds (report.html's timeline lane): the lowest free one.
    const { slot, giveBack } = this.takeSlot();
    const seen: { proc: ShardProcess | null } = { proc: null };
    const release = () => {
      this.console.onShardExited(shard);
      giveBack();
      poolRelease();
    };
    // 2. Start and supervise it: spawn, wall-clock timeout, evidence, verdict (exec/shard.ts).
    const { result, filesNotStarted } = await runShard({
      ctx,
      shard,
      hooks: this.shardHooks(shard, seen, release),
      cancelled: () => this.cancelledBy ?? this.budget?.killReason() ?? null,
    }).catch((error: unknown) => ({
      // 3. Our own failure costs this shard, not the run.
      result: this.ownFailure(shard, error, seen.proc),
      filesNotStarted: [],
    }));
    giveBack();
    // 4. Its timeline: the slot, and when it was signalled and gone.
    const proc = seen.proc;
    if (result.startedAt !== null && proc !== null && proc.goneMs !== null) {
      result.timeline = { slot, sigtermMs: proc.sigtermMs, sigkillMs: proc.sigkillMs, goneMs: proc.goneMs };
    }
    // 5. The unstarted files of a killed batch run again, one shard each.
    for (const again of this.redispatch(shard, result, filesNotStarted)) enqueue(again);
    // 6. Its verdict: the console, then the report files.
    this.running.delete(shard.index);
    this.results.set(shard.index, result);
    await this.console.onShardEnd(result, this.shardTotal());
    // Not awaited: the next shard need not wait for the disk. None after the last shard: the final write
    // follows at once (bench/README.md, "Where the time goes").
    if (this.results.size < this.allShards().length) void this.writeReports(false);
    return result;
  }

  /** Takes the lowest free job slot; `giveBack` frees it (idempotent). */
  private takeSlot(): { slot: number; giveBack: () => void } {
    let slot = 1;
    while (this.slotsTaken.has(slot)) slot++;
    this.slotsTaken.add(slot);
    let holding = true;
    const giveBack = () => {
      if (holding) this.slotsTaken.delete(slot);
      holding = false;
    };
    return { slot, giveBack };
  }

  /** What the run hears of a running shard; `seen.proc` is its last child spawned. */
  private shardHooks(shard: PlannedShard, seen: { proc: ShardProcess | null }, release: () => void): ShardHooks {
    const { settings } = this.inputs;
    return {
      onStart: (running) => {
        this.running.set(shard.index, running);
        this.console.onShardStart(
          shard,
          this.shardTotal(),
          settings.timeoutMs,
          running.logPath,
          this.locks.startNote(shard),
        );
        // A runner killed soon after leaves reports naming this shard as running.
        if (this.firstWriteAsked) void this.writeReports(false);
      },
      onWarning: (s, message) => this.console.onShardWarning(s, this.shardTotal(), message),
      register: (proc) => {
        seen.proc = proc;
        this.live.add(proc);
        // A cancel that raced with the spawn still reaches this shard.
        if (this.cancelledBy) proc.terminate("cancel");
        return () => this.live.delete(proc);
      },
      // The slot goes to the next shard while this one's JUnit and marks are read (bench/README.md).
      onSlotFree: release,
    };
  }

  /** Our own failure (full disk, bad socket path) costs this shard, not the run: kill what it started, say why. */
  private ownFailure(shard: PlannedShard, error: unknown, lastProc: ShardProcess | null): ShardResult {
    this.running.get(shard.index)?.process?.killNow("cancel");
    const message = (error as Error).message ?? String(error);
    const notSpawned = lastProc === null || error instanceof ShardNotStartedError;
    return notSpawned
      ? neverStarted(shard, `shardguard could not start it: ${message}`)
      : supervisionFailed(shard, message);
  }

  /** Shards of the run: the plan's and the re-dispatched ones so far. */
  private shardTotal(): number {
    return this.inputs.plan.shards.length + this.redispatched.length;
  }

  /** Re-dispatch of a killed batched shard's unstarted files (engine/redispatch.ts); none once cancelled. */
  private redispatch(shard: PlannedShard, result: ShardResult, filesNotStarted: readonly string[]): PlannedShard[] {
    if (this.cancelledBy) return [];
    const added = splitKilledBatch(
      shard,
      result,
      filesNotStarted,
      this.inputs.plan.shards.length + this.redispatched.length + 1,
      redispatchBatches(this.inputs.settings),
    );
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
        : !final && this.running.has(shard.index)
          ? "still running when this report was written"
          : unstartedReason(this.budget, final);
      return neverStarted(shard, reason + this.locks.notStartedNote(shard));
    });
  }

  /** Writes the reports (engine/report-writer.ts) at start, as shards start and end, and at the end. */
  private writeReports(final: true): Promise<RunReport>;
  private writeReports(final: false): Promise<RunReport | null>;
  private writeReports(final: boolean): Promise<RunReport | null> {
    // Every call waits on the same promise, so the writes keep their order.
    return this.reportWriter().then((writer) => writer.write(final, () => this.buildReport(final)));
  }

  /** The report writer, its modules imported on the first write, after the first spawns (bench/README.md). */
  private reportWriter(): Promise<ReportWriter> {
    this.writerLoaded ??= import("./report-writer.ts").then(({ ReportWriter }) => {
      const { junit, json, ctrf, html } = this.inputs.settings;
      this.writer = new ReportWriter(
        { junit, json, ctrf, html, runDir: () => this.runDir, htmlHistory: this.inputs.htmlHistory },
        this.inputs.redact,
        (message) => this.inputs.out.line(message),
      );
      return this.writer;
    });
    return this.writerLoaded;
  }

  /** The report of the run as it stands. */
  private buildReport(final: boolean): RunReport {
    const { settings } = this.inputs;
    const shards = markQuarantined(
      this.shardResults(final).map((r) => this.locks.annotate(r)),
      this.inputs.quarantine,
    );
    const cost = runCost(shards, this.budget);
    const summary = { ...summarize(shards), ...(cost ? { cost } : {}) };
    const verdict = decideRun(shards, summary, {
      final,
      cancelledBy: this.cancelledBy,
      filtersByName: filtersByName(settings.bunArgs),
    });
    this.filterMatchedNothing = verdict.filterMatchedNothing;
    const report: RunReport = {
      schemaVersion: REPORT_SCHEMA_VERSION,
      runId: this.runId,
      completed: final && this.cancelledBy === null,
      cancelledBy: this.cancelledBy,
      startedAt: this.startedAt.toISOString(),
      finishedAt: final ? new Date().toISOString() : null,
      durationMs: performance.now() - this.t0,
      exitCode: verdict.exitCode,
      root: settings.root,
      tool: { name: "shardguard", version: TOOL_VERSION },
      bun: {
        version: this.inputs.bunVersion,
        path: settings.bun,
        ...(this.bunMissing.length > 0 ? { missing: this.bunMissing } : {}),
      },
      settings: {
        jobs: settings.jobs,
        timeoutMs: settings.timeoutMs,
        graceMs: settings.graceMs,
        filesPerShard: settings.filesPerShard,
        bunArgs: [...settings.bunArgs],
      },
      summary,
      preset: this.inputs.preset ?? null,
      plan: this.inputs.provenance?.plan ?? null,
      slice: this.inputs.provenance?.slice ?? null,
      merged: null,
      rerunOf: this.inputs.provenance?.rerunOf ?? null,
      sweeps: { staleRuns: strip(this.sweeps.staleRuns), endOfRun: strip(this.sweeps.endOfRun) },
      shards,
    };
    if (final) this.inputs.onFinalReport?.(report);
    return report;
  }
}

const strip = (list: Escapee[]) => list.map(({ pid, command, leftGroup }) => ({ pid, command, leftGroup }));
