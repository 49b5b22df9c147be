/**
 * The detached side of `shardguard bg`: holds the lane, runs here or follows the CI run, enforces the cap, and ends
 * the log with the sentinel however it ends (docs/background.md). Lines are appended synchronously, so the
 * sentinel is always the last line; only a SIGKILL leaves a log without it.
 */
import { appendFileSync } from "node:fs";
import { ghRunner } from "../../exec/gh.ts";
import { EXIT } from "../../results/codes.ts";
import type { Host } from "../../engine/host.ts";
import { acquireRunLock, LockAbortedError, lockWaitMessage, type RunLock } from "../../engine/lock.ts";
import { followDispatch, type DispatchSpec } from "./dispatch.ts";
import { usdText } from "../../results/cost-apply.ts";
import {
  BG_EXIT,
  procStartOf,
  readRecord,
  reportSpend,
  sentinelLine,
  stateForCode,
  writeRecord,
  type BgEnding,
} from "./record.ts";

/** What the foreground hands the worker (as one JSON argument). */
export interface WorkerSpec {
  /** The log (its record sits next to it). */
  record: string;
  backend: "local" | "dispatch";
  lock: string;
  noWait: boolean;
  /** Wall-clock cap from the moment the lock is held, seconds. */
  capSeconds: number;
  /** The run's grace period, ms: a cancel that has not ended the run by cap + grace and a margin kills at once. */
  graceMs: number;
  runArgv: string[];
  dispatch: DispatchSpec | null;
}

/** Runs `shardguard run ARGV` in this process with `host`; returns its exit code. */
export type RunCommandFn = (argv: readonly string[], host: Host) => Promise<number>;

/** Poll interval of the dispatch follower, ms: SHARDGUARD_BG_POLL_MS, else the default. */
export function pollMsFrom(env: Record<string, string | undefined>): number {
  const n = Number(env.SHARDGUARD_BG_POLL_MS);
  return Number.isFinite(n) && n >= 10 ? n : 15_000;
}

/**
 * Writes how the run ended into its record, before the sentinel; a record that cannot be written only loses the
 * wording.
 */
async function recordEnding(log: string, ending: BgEnding): Promise<number | null> {
  try {
    const record = readRecord(log);
    // The total outlives the report copy, which later runs prune (docs/background.md).
    const spent = reportSpend(record);
    record.ending = { ...ending, ...(spent !== null ? { spentUsd: spent } : {}) };
    await writeRecord(record);
    return spent;
  } catch {
    // The sentinel alone still gives the code; status then names the state by the code.
    return null;
  }
}

/**
 * The worker's body. Never throws: anything unexpected is logged and ends as exit 2, with the sentinel.
 * @param host the worker process (its signals cancel the run)
 * @returns the code the sentinel carries
 */
export function bgWorker(spec: WorkerSpec, host: Host, runRun: RunCommandFn): Promise<number> {
  return new WorkerRun(spec, host).run(runRun);
}

/** The run's exit code as the sentinel carries it (docs/background.md, the log and the sentinel: the code table). */
function localRunCode(runCode: number, capReached: boolean): number {
  if (capReached) return BG_EXIT.other;
  if (runCode === EXIT.sigint || runCode === EXIT.sigterm) return BG_EXIT.cancelled;
  return runCode === 0 || runCode === 1 ? runCode : BG_EXIT.other;
}

/**
 * Why a local run ended, for the record's ending (docs/background.md, `status`: a finished run's first line);
 * null when its code says it all (passed, failed).
 */
function localRunWhy(
  code: number,
  runCode: number,
  capReached: boolean,
  capSeconds: number,
  cancelledBy: string | null,
): string | null {
  if (capReached) return `cap of ${capSeconds}s reached; the run was cancelled`;
  if (code === BG_EXIT.cancelled) return `cancelled by ${cancelledBy ?? "a signal"}`;
  if (code === BG_EXIT.other) return `the run ended with exit ${runCode} (refused or could not start; see the log)`;
  return null;
}

/** One worker's run: its steps share the state that signals and the cap change from callbacks. */
class WorkerRun {
  private readonly log: string;
  private code: number = BG_EXIT.other;
  private lock: RunLock | null = null;
  private cancelledBy: "SIGINT" | "SIGTERM" | null = null;
  private capReached = false;
  /** Why the run ends with exit 2 or 130, for the record's ending (status prints it). */
  private why = "";
  /** The state a dispatch follow named (a CI timed_out is timed-out), else the code's. */
  private endState: BgEnding["state"] | null = null;
  private readonly timers: ReturnType<typeof setTimeout>[] = [];
  // Before the run has started, a signal aborts the lock wait or the follower.
  private readonly abort = new AbortController();
  private runCancel: ((signal: "SIGINT" | "SIGTERM") => void) | null = null;

  constructor(
    private readonly spec: WorkerSpec,
    private readonly host: Host,
  ) {
    this.log = spec.record;
  }

  private readonly line = (text: string) => appendFileSync(this.log, text.endsWith("\n") ? text : `${text}\n`);

  async run(runRun: RunCommandFn): Promise<number> {
    // 1. Listen for signals: they cancel the run, or before it listens abort the lock wait or the follower.
    const unsubscribe = this.host.onSignal((signal) => {
      this.cancelledBy ??= signal;
      if (this.runCancel) this.runCancel(signal);
      else this.abort.abort(signal);
    });
    try {
      // 2. Put this process in the record, for status to tell a live worker from a dead one.
      await this.claimRecord();
      // 3. Hold the lane (or end: busy with --no-wait, or cancelled while waiting).
      if (!(await this.holdLane())) return this.code;
      // 4. Start the cap's clock.
      this.armCap();
      // 5. Follow the CI run, or run here.
      if (this.spec.backend === "dispatch" && this.spec.dispatch) this.code = await this.followCi(this.spec.dispatch);
      else this.code = await this.runHere(runRun);
      return this.code;
    } catch (error) {
      this.line(`shardguard bg: ${(error as Error).stack ?? String(error)}`);
      this.code = BG_EXIT.other;
      this.why = `bg failed: ${(error as Error).message ?? String(error)}`.split("\n")[0]!;
      return this.code;
    } finally {
      // 6. Let go of the cap, the lane and the signals; write the ending, then the sentinel as the last line.
      for (const t of this.timers) clearTimeout(t);
      await this.lock?.release().catch(() => {});
      unsubscribe?.();
      const state = this.capReached ? "timed-out" : (this.endState ?? stateForCode(this.code));
      const spent = await recordEnding(this.log, { code: this.code, state, why: this.why });
      if (spent !== null) this.line(`shardguard bg: spent ${usdText(spent)}`);
      this.line(sentinelLine(this.code));
    }
  }

  private async claimRecord(): Promise<void> {
    const record = readRecord(this.log);
    record.pid = process.pid;
    record.procStart = procStartOf(process.pid);
    await writeRecord(record);
  }

  /** Takes the lane lock, waiting unless --no-wait; false (code and why set) when it was not taken. */
  private async holdLane(): Promise<boolean> {
    const { spec, line } = this;
    const noWait = new AbortController();
    try {
      this.lock = await acquireRunLock(spec.lock, {
        onWait: (holder) => {
          line(`shardguard bg: ${lockWaitMessage(spec.lock, holder)}`);
          if (spec.noWait) noWait.abort();
        },
        signal: AbortSignal.any([this.abort.signal, noWait.signal]),
      });
    } catch (error) {
      if (!(error instanceof LockAbortedError)) throw error;
      const { cancelledBy } = this;
      line(
        cancelledBy
          ? `shardguard bg: cancelled by ${cancelledBy} while waiting for lane ${spec.lock}; nothing ran`
          : `shardguard bg: lane ${spec.lock} is busy and --no-wait was given; nothing ran`,
      );
      this.code = cancelledBy ? BG_EXIT.cancelled : BG_EXIT.other;
      this.why = cancelledBy
        ? `cancelled by ${cancelledBy} while waiting for lane ${spec.lock}`
        : `lane ${spec.lock} was busy (--no-wait)`;
      return false;
    }
    line(`shardguard bg: holding lane ${spec.lock}; cap ${spec.capSeconds}s from now`);
    return true;
  }

  /** At the cap, cancels the run (or stops the follower); a cancel that did not end the run in time kills at once. */
  private armCap(): void {
    const { spec } = this;
    const onCap = () => {
      this.capReached = true;
      this.line(`shardguard bg: cap of ${spec.capSeconds}s reached: cancelling the run`);
      if (this.runCancel) this.runCancel("SIGTERM");
      else this.abort.abort("cap");
    };
    this.timers.push(setTimeout(onCap, spec.capSeconds * 1000));
    // A cancel that did not end the run in time kills every shard at once.
    this.timers.push(setTimeout(() => this.runCancel?.("SIGTERM"), spec.capSeconds * 1000 + spec.graceMs + 30_000));
  }

  /** Dispatches (or joins) the CI run and follows it to its conclusion, the cap or a signal. */
  private async followCi(dispatch: DispatchSpec): Promise<number> {
    const { host, line, log } = this;
    try {
      return await followDispatch(dispatch, {
        gh: ghRunner(host.cwd, host.env),
        line,
        pollMs: pollMsFrom(host.env),
        signal: this.abort.signal,
        onEnding: (state, text) => {
          this.endState = state;
          this.why = text;
        },
        onRun: async (run) => {
          const r = readRecord(log);
          r.ci = {
            repo: dispatch.repo,
            workflow: dispatch.workflow,
            runId: run.databaseId,
            url: run.url,
            nonce: dispatch.nonce,
          };
          await writeRecord(r);
        },
      });
    } catch (error) {
      if (!this.abort.signal.aborted) throw error;
      const { capReached, cancelledBy } = this;
      line(
        capReached
          ? "shardguard bg: stopped following (cap reached); the CI run goes on"
          : `shardguard bg: stopped following (${cancelledBy}); the CI run goes on`,
      );
      this.why = capReached
        ? `cap of ${this.spec.capSeconds}s reached; stopped following, the CI run goes on`
        : `cancelled by ${cancelledBy}; stopped following, the CI run goes on`;
      return capReached ? BG_EXIT.other : BG_EXIT.cancelled;
    }
  }

  /** Runs `shardguard run` in this process, its output into the log; returns the sentinel's code. */
  private async runHere(runRun: RunCommandFn): Promise<number> {
    const runCode = await runRun(this.spec.runArgv, this.runHost());
    const code = localRunCode(runCode, this.capReached);
    const why = localRunWhy(code, runCode, this.capReached, this.spec.capSeconds, this.cancelledBy);
    if (why !== null) this.why = why;
    return code;
  }

  /** The host the run sees: the log for its output, and this worker's signals and cap for its cancel. */
  private runHost(): Host {
    const { host, line, log } = this;
    let sawRunId = false;
    return {
      env: host.env,
      cwd: host.cwd,
      stdout: (text) => {
        line(text);
        // The run's first line names its id; the record then points `status` at its report copy.
        const m = sawRunId ? null : /^shardguard: run (\S+): /.exec(text);
        if (m) {
          sawRunId = true;
          const r = readRecord(log);
          r.runId = m[1]!;
          void writeRecord(r).catch(() => {});
        }
      },
      stderr: line,
      onSignal: (handler) => {
        this.runCancel = handler;
        // A signal or the cap that came before the run listened.
        if (this.cancelledBy) handler(this.cancelledBy);
        else if (this.capReached) handler("SIGTERM");
        return () => {
          this.runCancel = null;
        };
      },
      isTTY: false,
    };
  }
}
