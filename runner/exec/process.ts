/**
 * Spawns and kills shard processes: every kill path of the runner (group signals, cookie sweeps,
 * `cgroup.kill`) starts here. Design and kill sequence: docs/architecture.md, "One module spawns and kills".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { onExit } from "signal-exit";
import { SHARD_ENV } from "./bun-command.ts";
import { closeShardLog, openShardLog, settleShardLog } from "./log-check.ts";
import { watchOomKills, type OomKills } from "./oom.ts";
import { isAlive, processesWithEnv, readProcStat, sparedGroups, type EnvProcess } from "./proc-inspect.ts";
import { cgroupPopulated, killCgroup, removeCgroups, staleShardCgroups } from "./cgroups.ts";
import type { ShardResources } from "../results/report-model.ts";
import { killAllCgroups, startMeter, type ShardMeter } from "./resource-usage.ts";

/** Lifecycle of one shard process; it only moves forward (docs/architecture.md, "One module spawns and kills"). */
export type ProcessState = "pending" | "running" | "terminating" | "killing" | "sweeping" | "finished" | "spawn-failed";

/** Why shardguard signalled a process group, if it did. */
export type KillReason = "timeout" | "cancel";

/** What to run and how to supervise it. Times in ms. */
export interface ProcessSpec {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /** The child's stdout and stderr, one O_APPEND descriptor (mode 0600). */
  logPath: string;
  /** A line the runner writes to the log before the child starts (a batch's full file list); none when absent. */
  logHeader?: string;
  timeoutMs: number;
  /** SIGTERM → SIGKILL delay. */
  graceMs: number;
  onState?: (state: ProcessState) => void;
  /** `NAME=value` in `env` marking the process and its descendants, swept after the child exits. */
  cookie?: string;
}

/** A process found carrying a shard's cookie after the shard ended, and killed. */
export interface Escapee {
  pid: number;
  command: string;
  /** No longer in the shard's process group (setsid, double fork). */
  leftGroup: boolean;
}

/** How a supervised process ended. */
export interface ProcessOutcome {
  /** Null when ended by a signal or never spawned. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when shardguard signalled the group before the child exited. */
  killedBy: KillReason | null;
  /** The grace period ran out and SIGKILL was needed. */
  escalated: boolean;
  /** Spawn to exit on a monotonic clock. */
  durationMs: number;
  startedAt: Date;
  pid: number | null;
  spawnError: string | null;
  /** Bytes the log grew by from the spawn until the outcome (its size on disk). */
  logBytes: number;
  /** Set when the log may miss output (not opened, RLIMIT_FSIZE, no space); see {@link logProblem}. */
  logError: string | null;
  /** Said of a log deleted while the shard ran and put back (exec/log-check.ts). */
  logNote: string | null;
  /** Descendants still alive when the child exited, killed by the sweep. */
  leftovers: Escapee[];
  resources: ShardResources | null;
  /** OOM kills while it ran (exec/oom.ts); null when none or unknown. */
  oomKills: OomKills | null;
  /** The child was stopped when SIGTERM went out, so SIGCONT followed it. */
  stoppedAtSigterm: boolean;
}

const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Told of each shard's group and cgroup from spawn until killed: the guardian, for a SIGKILLed runner. */
export interface GroupWatcher {
  add(pgid: number, cgroup: string | null): void;
  remove(pgid: number): void;
}
let groupWatcher: GroupWatcher | null = null;

/** Sets (or with null, clears) the {@link GroupWatcher} of the shards spawned from now on. */
export function watchGroups(watcher: GroupWatcher | null): void {
  groupWatcher = watcher;
}

/** SIGKILLs groups and cgroups a dead runner left (the guardian's clean-up); returns how many still held a process. */
export function killLeftGroups(groups: Iterable<{ pgid: number; cgroup: string | null }>): number {
  let count = 0;
  for (const { pgid, cgroup } of groups) {
    let found = signalGroup(pgid, "SIGKILL");
    if (cgroup !== null && cgroupPopulated(cgroup)) {
      killCgroup(cgroup);
      found = true;
    }
    if (found) count++;
  }
  return count;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Only SIGKILL of the runner escapes signal-exit; children run with --no-orphans for that.
  onExit(() => {
    killAllGroups("SIGKILL");
    killAllCgroups();
    removeCgroups();
  });
}

/** Sends `signal` to every live shard process group. Returns how many were signalled. */
export function killAllGroups(signal: NodeJS.Signals): number {
  let count = 0;
  for (const pgid of liveGroups) if (signalGroup(pgid, signal)) count++;
  return count;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** A supervised shard process. Create with {@link startProcess}; await {@link ShardProcess.done}. */
export class ShardProcess {
  state: ProcessState = "pending";
  readonly done: Promise<ProcessOutcome>;
  private child: ChildProcess | null = null;
  private killedBy: KillReason | null = null;
  private pendingKill: { reason: KillReason; now: boolean } | null = null;
  private escalated = false;
  private stoppedAtSigterm = false;
  private timers: ReturnType<typeof setTimeout>[] = [];
  private readonly t0 = performance.now();
  private readonly startedAt = new Date();
  /** When SIGTERM went to the group, ms after the spawn; null until then. */
  sigtermMs: number | null = null;
  /** When SIGKILL went to the group before the child exited; null unless it did. */
  sigkillMs: number | null = null;
  /** When the child had exited and its group was killed and swept, ms after the spawn; null until then. */
  goneMs: number | null = null;

  constructor(private readonly spec: ProcessSpec) {
    installExitHook();
    this.done = this.run();
  }

  /** Process id of the child (also its process group id); null before spawn. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Milliseconds since spawn on a monotonic clock. */
  elapsedMs(): number {
    return performance.now() - this.t0;
  }

  /** Starts SIGTERM → grace → SIGKILL for the whole group. Idempotent; the first reason wins. */
  terminate(reason: KillReason): void {
    if (this.state === "pending") {
      this.pendingKill ??= { reason, now: false };
      return;
    }
    if (this.state !== "running" || !this.child?.pid) return;
    this.killedBy = reason;
    this.setState("terminating");
    this.sigtermMs = this.elapsedMs();
    signalGroup(this.child.pid, "SIGTERM");
    // A stopped process acts on no signal but SIGKILL; systemd sends SIGCONT after SIGTERM for this.
    const state = readProcStat(this.child.pid)?.state;
    this.stoppedAtSigterm = state === "T" || state === "t";
    if (this.stoppedAtSigterm) signalGroup(this.child.pid, "SIGCONT");
    this.timers.push(setTimeout(() => this.killNow(), this.spec.graceMs));
  }

  /** SIGKILLs the whole group at once (second Ctrl-C, grace expired). */
  killNow(reason: KillReason = "cancel"): void {
    if (this.state === "pending") {
      this.pendingKill = { reason: this.pendingKill?.reason ?? reason, now: true };
      return;
    }
    if (!this.child?.pid || (this.state !== "running" && this.state !== "terminating")) return;
    this.killedBy ??= reason;
    if (this.state === "terminating") this.escalated = true;
    this.setState("killing");
    this.sigkillMs = this.elapsedMs();
    signalGroup(this.child.pid, "SIGKILL");
  }

  private setState(state: ProcessState): void {
    this.state = state;
    this.spec.onState?.(state);
  }

  private async run(): Promise<ProcessOutcome> {
    const [command, ...args] = this.spec.argv;
    // Opened synchronously so the log exists once startProcess returns; a failed open must not cost the run.
    const log = openShardLog(this.spec.logPath, this.spec.logHeader);
    const logFd = log.fd;
    let child: ChildProcess;
    // Made before the spawn, so the move right after it is one write.
    const meter: ShardMeter = startMeter();
    try {
      const cgroup = meter.cgroupDir;
      child = spawn(command!, args, {
        cwd: this.spec.cwd,
        env: cgroup === null ? this.spec.env : { ...this.spec.env, [SHARD_ENV.cgroup]: cgroup },
        detached: true,
        // One descriptor for both: the kernel orders the two streams by write.
        stdio: ["ignore", logFd ?? "ignore", logFd ?? "ignore"],
      });
    } catch (error) {
      closeShardLog(log);
      return this.spawnFailed((error as Error).message, meter);
    }
    this.child = child;
    // At once, while the child is still loading Bun and has forked nothing.
    if (child.pid) meter.attach(child.pid);
    const spawned = await new Promise<string | null>((resolve) => {
      child.once("spawn", () => resolve(null));
      child.once("error", (error) => resolve(error.message));
    });
    if (spawned !== null || !child.pid) {
      closeShardLog(log);
      return this.spawnFailed(spawned ?? "no pid", meter);
    }
    const pgid = child.pid;
    liveGroups.add(pgid);
    const watcher = groupWatcher;
    watcher?.add(pgid, meter.cgroupDir);
    this.setState("running");
    if (this.pendingKill) {
      if (this.pendingKill.now) this.killNow(this.pendingKill.reason);
      else this.terminate(this.pendingKill.reason);
    }

    this.timers.push(setTimeout(() => this.terminate("timeout"), this.spec.timeoutMs));
    const oomKills = watchOomKills(meter.cgroupDir);

    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const durationMs = this.elapsedMs();
    const oom = oomKills();
    for (const timer of this.timers) clearTimeout(timer);
    this.setState("sweeping");
    // After a self exit the cookie sweep runs first so leaks inside the group are named too. Nothing
    // waits for the log's descriptor: an escaped process may hold it.
    const sweep = () =>
      this.spec.cookie ? sweepCookie(this.spec.cookie, "exact", pgid, (pid) => meter.noteEscapee(pid)) : [];
    let leftovers: Escapee[] = [];
    if (this.killedBy === null) leftovers = sweep();
    signalGroup(pgid, "SIGKILL");
    liveGroups.delete(pgid);
    if (this.killedBy !== null) leftovers = sweep();
    // The last kill path: what is still in the cgroup left both the group and the cookie.
    for (const rest of meter.killRest()) {
      if (rest.pgid !== pgid && !leftovers.some((l) => l.pid === rest.pid))
        leftovers.push({ pid: rest.pid, command: rest.command, leftGroup: true });
    }
    watcher?.remove(pgid);
    const resources = await meter.finish(() => this.elapsedMs());
    this.goneMs = this.elapsedMs();
    const logged = settleShardLog(this.spec.logPath, log, exit.signal);
    this.setState("finished");
    return {
      exitCode: exit.code,
      signal: exit.signal,
      killedBy: this.killedBy,
      escalated: this.escalated,
      durationMs,
      startedAt: this.startedAt,
      pid: pgid,
      spawnError: null,
      logBytes: logged.bytes,
      logError: logged.problem,
      logNote: logged.note,
      leftovers,
      resources,
      oomKills: oom,
      stoppedAtSigterm: this.stoppedAtSigterm,
    };
  }

  private spawnFailed(message: string, meter: ShardMeter): ProcessOutcome {
    meter.discard();
    this.setState("spawn-failed");
    return {
      exitCode: null,
      signal: null,
      killedBy: null,
      escalated: false,
      durationMs: 0,
      startedAt: this.startedAt,
      pid: null,
      spawnError: message,
      logBytes: 0,
      logError: null,
      logNote: null,
      leftovers: [],
      resources: null,
      oomKills: null,
      stoppedAtSigterm: false,
    };
  }
}

/** Spawns a supervised shard process; see {@link ShardProcess}. */
export function startProcess(spec: ProcessSpec): ShardProcess {
  return new ShardProcess(spec);
}

/** Most passes of one sweep; it stops at a pass that finds nothing new. */
export const SWEEP_PASSES = 8;

/**
 * SIGKILLs every other process whose environment holds `cookie` (`exact`, or as a `prefix`), and the
 * group of each found outside `groupId` (a fork relay changes pid, but its group stays). Environment
 * survives setsid and double forks. `groupId`: the shard child's group, which the caller kills itself;
 * `beforeKill` sees each pid just before its kill. Returns the processes killed.
 */
export function sweepCookie(
  cookie: string,
  match: "exact" | "prefix",
  groupId?: number,
  beforeKill?: (pid: number) => void,
): Escapee[] {
  return sweepPasses(() => processesWithEnv(cookie, match, groupId), groupId, beforeKill);
}

/**
 * Kills shard processes of earlier runs whose runner (pid in `runnerPidVar`) is gone, found by the
 * cookie prefix, and the members of shard cgroups dead runners left. Returns the processes killed.
 */
export function sweepStaleRuns(cookiePrefix: string, runnerPidVar: string): Escapee[] {
  const stale = () =>
    processesWithEnv(cookiePrefix, "prefix").filter((proc) => {
      const runner = Number(proc.env.get(runnerPidVar));
      return !(Number.isInteger(runner) && runner > 0 && isAlive(runner));
    });
  const killed = sweepPasses(stale, undefined).map((e) => ({ ...e, leftGroup: true }));
  // Its guardian died with it, so nothing else will empty these.
  for (const { dir, members } of staleShardCgroups()) {
    for (const m of members)
      if (!killed.some((k) => k.pid === m.pid)) killed.push({ pid: m.pid, command: m.command, leftGroup: true });
    killCgroup(dir);
  }
  return killed;
}

function sweepPasses(
  find: () => EnvProcess[],
  groupId: number | undefined,
  beforeKill?: (pid: number) => void,
): Escapee[] {
  const killed = new Map<number, Escapee>();
  const spared = sparedGroups();
  for (let pass = 0; pass < SWEEP_PASSES; pass++) {
    const fresh = find().filter((proc) => !killed.has(proc.pid));
    if (fresh.length === 0) break;
    for (const proc of fresh) {
      beforeKill?.(proc.pid);
      try {
        process.kill(proc.pid, "SIGKILL");
        killed.set(proc.pid, {
          pid: proc.pid,
          command: proc.command,
          leftGroup: groupId !== undefined && proc.pgid !== groupId,
        });
      } catch {
        // Gone already.
      }
      if (proc.pgid !== null && proc.pgid > 1 && proc.pgid !== groupId && !spared.has(proc.pgid))
        signalGroup(proc.pgid, "SIGKILL");
    }
  }
  return [...killed.values()];
}
