/** The ways a shard ends without a verdict of Bun's own, or has no process (docs/reports.md, "Verdict rules"). */
import type { FailureKind, ShardStatus, TestStatus } from "./report-model.ts";
import { seconds } from "../util/format.ts";

/** How a shard ended without Bun's verdict, or why it has no process; {@link ENDINGS} maps each kind. */
export type Interruption =
  /** Killed at the deadline; `sigkilled`: after the grace period; `stopped`: it was SIGSTOPped at SIGTERM. */
  | { kind: "timeout"; timeoutMs: number; graceMs: number; sigkilled: boolean; stopped: boolean }
  /** Killed because the run was cancelled (or a failed event handshake); `signal` the run's, when known. */
  | { kind: "cancelled"; signal: string | null }
  /** Ended by a signal shardguard did not send; `oom`: the kernel's OOM killer ended processes meanwhile. */
  | { kind: "foreign-signal"; signal: string; oom: { count: number; scope: "shard" | "runner" } | null }
  /** Exited 0 or 1 after reaching the end of the run, its JUnit past the read limit. */
  | { kind: "junit-over-limit"; exitCode: number; problem: string }
  /** Exited after reaching the end of the run, its JUnit unusable otherwise (missing, malformed). */
  | { kind: "junit-unusable"; exitCode: number; problem: string }
  /** Exited 0 or 1 before the end of the run (e.g. `process.exit`); `noJUnit` says what became of Bun's JUnit. */
  | { kind: "early-exit"; exitCode: 0 | 1; noJUnit: string }
  /** Exited 0 or 1 without the end mark, which may have gone with a deleted run directory. */
  | { kind: "end-unknown"; exitCode: 0 | 1; problem: string }
  /** Exited with another code. */
  | { kind: "exit-code"; exitCode: number; noJUnit: string }
  /** Never spawned (queued when the run ended, cancelled first, the OS refused). */
  | { kind: "never-started"; reason: string }
  /** A preset's diff selection left it out: never spawned, a success for the exit code. */
  | { kind: "skipped-by-diff"; reason: string }
  /** shardguard itself failed to supervise it (an error of ours). */
  | { kind: "unsupervised"; error: string };

/** What one kind of {@link Interruption} decides. */
interface Ending<I extends Interruption> {
  /** The shard's status, and that of its entry in flight (or of every entry, without a process). */
  status: ShardStatus & TestStatus;
  /** `failure.type` of those entries. */
  failure: FailureKind;
  /** Bun reached the end of the run: nothing was in flight; an entry without its end event lost it. */
  reachedEnd: boolean;
  /** The shard's reason, one sentence. */
  reason(i: I): string;
}

const afterTheEnd = (i: { exitCode: number; problem: string }) =>
  `exited ${i.exitCode} after reaching the end of the run, but ${i.problem}: per-test results are the events' where ` +
  `they have them`;

/** Every kind of {@link Interruption}: its statuses, failure kind and reason. */
const ENDINGS: { [K in Interruption["kind"]]: Ending<Extract<Interruption, { kind: K }>> } = {
  timeout: {
    status: "timed-out",
    failure: "timeout",
    reachedEnd: false,
    reason: (i) => `killed after ${seconds(i.timeoutMs)} wall-clock timeout${killDetail(i)}`,
  },
  cancelled: {
    status: "crashed",
    failure: "crash",
    reachedEnd: false,
    reason: (i) => `run cancelled${i.signal ? ` (${i.signal})` : ""}`,
  },
  "foreign-signal": {
    status: "crashed",
    failure: "crash",
    reachedEnd: false,
    reason: (i) => `killed by ${i.signal}, a signal shardguard did not send${i.oom ? `: ${oomSentence(i.oom)}` : ""}`,
  },
  // Too large to read is a failure to read it, not a crash.
  "junit-over-limit": { status: "failed", failure: "junit-unreadable", reachedEnd: true, reason: afterTheEnd },
  "junit-unusable": { status: "crashed", failure: "crash", reachedEnd: true, reason: afterTheEnd },
  "early-exit": {
    status: "crashed",
    failure: "crash",
    reachedEnd: false,
    reason: (i) =>
      `exited ${i.exitCode} before finishing (${i.noJUnit}): the run ended early, e.g. a test called process.exit`,
  },
  // Nothing is known to have been in flight: the entry stands for the missing report.
  "end-unknown": {
    status: "crashed",
    failure: "crash",
    reachedEnd: true,
    reason: (i) =>
      `exited ${i.exitCode}, but whether Bun reached the end of the run is unknown: ` +
      `its end mark went with the deleted run directory (${i.problem})`,
  },
  "exit-code": {
    status: "crashed",
    failure: "crash",
    reachedEnd: false,
    reason: (i) => `exited with code ${i.exitCode} (${i.noJUnit})`,
  },
  "never-started": { status: "never-started", failure: "never-started", reachedEnd: false, reason: (i) => i.reason },
  "skipped-by-diff": {
    status: "skipped-by-diff",
    failure: "skipped-by-diff",
    reachedEnd: false,
    reason: (i) => i.reason,
  },
  unsupervised: {
    status: "crashed",
    failure: "crash",
    reachedEnd: false,
    reason: (i) => `shardguard could not supervise this shard: ${i.error}`,
  },
};

/** What followed the deadline's SIGTERM; "" when the group exited within the grace period. */
function killDetail(i: Extract<Interruption, { kind: "timeout" }>): string {
  const grace = `SIGKILL after ${seconds(i.graceMs)} grace period`;
  if (i.stopped)
    return (
      ` (it was stopped, e.g. by SIGSTOP, when SIGTERM was sent; SIGCONT ` +
      `followed${i.sigkilled ? `, then ${grace}` : ""})`
    );
  return i.sigkilled ? ` (${grace}: SIGTERM was ignored)` : "";
}

/** The OOM killer's clause (exec/oom.ts); the runner cgroup's count is shared with concurrent shards. */
export function oomSentence(oom: { count: number; scope: "shard" | "runner" }): string {
  const where =
    oom.scope === "shard" ? "in its cgroup" : "in the runner's memory cgroup (shared with any shard running then)";
  return `the kernel's OOM killer ended ${oom.count} process${oom.count === 1 ? "" : "es"} ${where} while it ran`;
}

/** The row of {@link ENDINGS} for `i`, and its reason. */
export function endingOf(i: Interruption): {
  status: ShardStatus & TestStatus;
  failure: FailureKind;
  reachedEnd: boolean;
  reason: string;
} {
  const ending = ENDINGS[i.kind] as Ending<Interruption>;
  return { status: ending.status, failure: ending.failure, reachedEnd: ending.reachedEnd, reason: ending.reason(i) };
}
