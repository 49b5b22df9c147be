/**
 * The detached side of `shardguard bg` (`shardguard __bg-worker SPEC`):
 * takes the lane lock, runs the run in this process (local) or dispatches
 * and follows the CI run (dispatch), enforces the cap, and ends the log with
 * `### shardguard EXIT=<code> ###` whichever way that ends: 0 passed,
 * 1 failed, 130 cancelled (SIGINT / SIGTERM), 2 cap reached or anything else.
 * Only a SIGKILL (or a machine crash) leaves a log without the sentinel;
 * `status` then calls the run incomplete.
 *
 * Every line is appended to the log with a synchronous write, so the log is
 * on disk as the run goes and the sentinel is always its last line.
 */
import { appendFileSync } from "node:fs";
import { ghRunner } from "../../exec/gh.ts";
import { EXIT } from "../../results/codes.ts";
import type { Host } from "../../engine/host.ts";
import { acquireRunLock, LockAbortedError, lockWaitMessage, type RunLock } from "../../engine/lock.ts";
import { followDispatch, type DispatchSpec } from "./dispatch.ts";
import { BG_EXIT, procStartOf, readRecord, sentinelLine, stateForCode, writeRecord, type BgEnding } from "./record.ts";

/** What the foreground hands the worker (as one JSON argument). */
export interface WorkerSpec {
  /** The log (its record sits next to it). */
  record: string;
  backend: "local" | "dispatch";
  lock: string;
  noWait: boolean;
  /** Wall-clock cap from the moment the lock is held, seconds. */
  capSeconds: number;
  /** The run's grace period, ms: a cancel that has not ended the run by cap + grace + 30 s kills at once. */
  graceMs: number;
  runArgv: string[];
  dispatch: DispatchSpec | null;
}

/** Runs `shardguard run ARGV` in this process with `host`; returns its exit code. */
export type RunRunner = (argv: readonly string[], host: Host) => Promise<number>;

/** Poll interval of the dispatch follower, ms: SHARDGUARD_BG_POLL_MS, default 15 s. */
export function pollMsFrom(env: Record<string, string | undefined>): number {
  const n = Number(env.SHARDGUARD_BG_POLL_MS);
  return Number.isFinite(n) && n >= 10 ? n : 15_000;
}

/** Writes how the run ended into its record, before the sentinel; a record that cannot be written only loses the wording. */
async function recordEnding(log: string, ending: BgEnding): Promise<void> {
  try {
    const record = readRecord(log);
    record.ending = ending;
    await writeRecord(record);
  } catch {
    // The sentinel alone still gives the code; status then names the state by the code.
  }
}

/**
 * The worker's body. Never throws: anything unexpected is logged and ends
 * as exit 2, with the sentinel.
 *
 * @param host the worker process (its signals cancel the run)
 * @returns the code the sentinel carries
 */
export async function bgWorker(spec: WorkerSpec, host: Host, runRun: RunRunner): Promise<number> {
  const log = spec.record;
  const line = (text: string) => appendFileSync(log, text.endsWith("\n") ? text : `${text}\n`);
  let code: number = BG_EXIT.other;
  let lock: RunLock | null = null;
  let cancelledBy: "SIGINT" | "SIGTERM" | null = null;
  let capReached = false;
  /** Why the run ends with exit 2 or 130, for the record's ending (status prints it). */
  let why = "";
  /** The state a dispatch follow named (a CI timed_out is timed-out), else the code's. */
  let endState: BgEnding["state"] | null = null;
  const timers: ReturnType<typeof setTimeout>[] = [];
  // Before the run has started, a signal aborts the lock wait or the follower.
  const abort = new AbortController();
  let runCancel: ((signal: "SIGINT" | "SIGTERM") => void) | null = null;
  const unsubscribe = host.onSignal((signal) => {
    cancelledBy ??= signal;
    if (runCancel) runCancel(signal);
    else abort.abort(signal);
  });
  try {
    const record = readRecord(log);
    record.pid = process.pid;
    record.procStart = procStartOf(process.pid);
    await writeRecord(record);

    const noWait = new AbortController();
    try {
      lock = await acquireRunLock(spec.lock, {
        onWait: (holder) => {
          line(`shardguard bg: ${lockWaitMessage(spec.lock, holder)}`);
          if (spec.noWait) noWait.abort();
        },
        signal: AbortSignal.any([abort.signal, noWait.signal]),
      });
    } catch (error) {
      if (!(error instanceof LockAbortedError)) throw error;
      line(
        cancelledBy
          ? `shardguard bg: cancelled by ${cancelledBy} while waiting for lane ${spec.lock}; nothing ran`
          : `shardguard bg: lane ${spec.lock} is busy and --no-wait was given; nothing ran`,
      );
      code = cancelledBy ? BG_EXIT.cancelled : BG_EXIT.other;
      why = cancelledBy
        ? `cancelled by ${cancelledBy} while waiting for lane ${spec.lock}`
        : `lane ${spec.lock} was busy (--no-wait)`;
      return code;
    }
    line(`shardguard bg: holding lane ${spec.lock}; cap ${spec.capSeconds}s from now`);

    const onCap = () => {
      capReached = true;
      line(`shardguard bg: cap of ${spec.capSeconds}s reached: cancelling the run`);
      if (runCancel) runCancel("SIGTERM");
      else abort.abort("cap");
    };
    timers.push(setTimeout(onCap, spec.capSeconds * 1000));
    // A cancel that did not end the run in time kills every shard at once.
    timers.push(setTimeout(() => runCancel?.("SIGTERM"), spec.capSeconds * 1000 + spec.graceMs + 30_000));

    if (spec.backend === "dispatch" && spec.dispatch) {
      const dispatch = spec.dispatch;
      try {
        code = await followDispatch(dispatch, {
          gh: ghRunner(host.cwd, host.env),
          line,
          pollMs: pollMsFrom(host.env),
          signal: abort.signal,
          onEnding: (state, text) => {
            endState = state;
            why = text;
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
        if (!abort.signal.aborted) throw error;
        line(
          capReached
            ? "shardguard bg: stopped following (cap reached); the CI run goes on"
            : `shardguard bg: stopped following (${cancelledBy}); the CI run goes on`,
        );
        code = capReached ? BG_EXIT.other : BG_EXIT.cancelled;
        why = capReached
          ? `cap of ${spec.capSeconds}s reached; stopped following, the CI run goes on`
          : `cancelled by ${cancelledBy}; stopped following, the CI run goes on`;
      }
      return code;
    }

    let sawRunId = false;
    const runHost: Host = {
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
        runCancel = handler;
        // A signal or the cap that came before the run listened.
        if (cancelledBy) handler(cancelledBy);
        else if (capReached) handler("SIGTERM");
        return () => {
          runCancel = null;
        };
      },
      isTTY: false,
    };
    const runCode = await runRun(spec.runArgv, runHost);
    code = capReached
      ? BG_EXIT.other
      : runCode === EXIT.sigint || runCode === EXIT.sigterm
        ? BG_EXIT.cancelled
        : runCode === 0 || runCode === 1
          ? runCode
          : BG_EXIT.other;
    if (capReached) why = `cap of ${spec.capSeconds}s reached; the run was cancelled`;
    else if (code === BG_EXIT.cancelled) why = `cancelled by ${cancelledBy ?? "a signal"}`;
    else if (code === BG_EXIT.other)
      why = `the run ended with exit ${runCode} (refused or could not start; see the log)`;
    return code;
  } catch (error) {
    line(`shardguard bg: ${(error as Error).stack ?? String(error)}`);
    code = BG_EXIT.other;
    why = `bg failed: ${(error as Error).message ?? String(error)}`.split("\n")[0]!;
    return code;
  } finally {
    for (const t of timers) clearTimeout(t);
    await lock?.release().catch(() => {});
    unsubscribe?.();
    await recordEnding(log, { code, state: capReached ? "timed-out" : (endState ?? stateForCode(code)), why });
    line(sentinelLine(code));
  }
}
