/**
 * The module that spawns and kills shard processes. Every kill path of the
 * runner starts here: `signalGroup` (a shard's process group: SIGTERM,
 * SIGCONT, SIGKILL; the exit hook's `killAllGroups`), the cookie sweeps
 * (`sweepCookie`, `sweepStaleRuns`), and `cgroup.kill` through
 * exec/cgroups.ts `killCgroup`, which the meters of exec/resource-usage.ts
 * call for what a shard's cgroup still holds (`killRest`, `killAllCgroups`)
 * and `killLeftGroups` for a dead runner's. The guardian (exec/guardian.ts
 * starts it) kills through `sweepCookie` and `killLeftGroups` here.
 *
 * A shard child runs detached (its own process group, so one signal reaches
 * every descendant that stayed in the group) with stdin from /dev/null.
 * Its stdout and stderr are one descriptor of its log file, opened O_APPEND:
 * the kernel writes every byte to the log as the child writes it, and the
 * runner never reads or holds a shard's output (it keeps the descriptor,
 * only to put back a log deleted under the run, exec/log-check.ts).
 *
 * Kill sequence, after Bazel's test encyclopedia and Jest's worker: at the
 * wall-clock deadline SIGTERM the group, after the grace period SIGKILL the
 * group. When the child exits by itself the group is SIGKILLed anyway, since
 * grandchildren left behind would otherwise outlive the run. The outcome is
 * decided when the child exits: nothing waits for the log's descriptor to be
 * closed, since a grandchild that escaped the group may hold it forever (the
 * cookie sweep kills such a grandchild).
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

/**
 * Lifecycle of one shard process, in order. A process moves forward only.
 *
 * - `pending`: created, not spawned.
 * - `running`: spawned, no signal sent by us.
 * - `terminating`: SIGTERM sent to the group (deadline or cancel), grace running.
 * - `killing`: SIGKILL sent to the group.
 * - `sweeping`: the child exited; the group is SIGKILLed, leftovers swept, the log checked.
 * - `finished`: outcome final.
 * - `spawn-failed`: the OS refused to start it.
 */
export type ProcessState = "pending" | "running" | "terminating" | "killing" | "sweeping" | "finished" | "spawn-failed";

/** Why shardguard signalled a process group, if it did. */
export type KillReason = "timeout" | "cancel";

/** What to run and how to supervise it. Times in ms. */
export interface ProcessSpec {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /** The child's stdout and stderr, one O_APPEND descriptor (created with mode 0600). */
  logPath: string;
  /** Wall-clock limit from spawn, ms. */
  timeoutMs: number;
  /** SIGTERM → SIGKILL delay, ms. */
  graceMs: number;
  /** Called on every state change. */
  onState?: (state: ProcessState) => void;
  /**
   * An environment entry (`NAME=value`) present in `env` that marks this
   * process and all its descendants; after the child exits, every process
   * still carrying it is SIGKILLed, including ones that left the group.
   */
  cookie?: string;
}

/** A process found carrying a shard's cookie after the shard ended, and killed. */
export interface Escapee {
  pid: number;
  /** Its command line, spaces between arguments, cut to 200 characters. */
  command: string;
  /** True when it was no longer in the shard's process group (setsid, double fork). */
  leftGroup: boolean;
}

/** How a supervised process ended. */
export interface ProcessOutcome {
  /** Exit code, or null when ended by a signal or never spawned. */
  exitCode: number | null;
  /** Name of the terminating signal, e.g. "SIGKILL"; null otherwise. */
  signal: NodeJS.Signals | null;
  /** Set when shardguard signalled the group before the child exited. */
  killedBy: KillReason | null;
  /** True when the grace period ran out and SIGKILL was needed. */
  escalated: boolean;
  /** Spawn to exit on a monotonic clock, ms. */
  durationMs: number;
  /** Wall-clock time of the spawn. */
  startedAt: Date;
  pid: number | null;
  /** Set when the process could not be spawned (e.g. ENOENT). */
  spawnError: string | null;
  /**
   * Bytes the log grew by from the spawn until the outcome (its size on
   * disk; the runner never sees the output itself).
   */
  logBytes: number;
  /**
   * Set when the log may miss output: it could not be opened (the output
   * then went to /dev/null), it reached the file size limit (RLIMIT_FSIZE),
   * or its file system had no space left when the child ended. See
   * {@link logProblem} for what this can and cannot see.
   */
  logError: string | null;
  /** Said of a log deleted while the shard ran and put back (exec/log-check.ts `settleShardLog`); null otherwise. */
  logNote: string | null;
  /** Descendants still alive when the child exited (in or out of its group), killed by the sweep. */
  leftovers: Escapee[];
  /** What the process tree cost and how it was measured (exec/resource-usage.ts); null when it never spawned. */
  resources: ShardResources | null;
  /** The kernel's OOM killer ended processes of it while it ran (exec/oom.ts); null when none or unknown. */
  oomKills: OomKills | null;
  /** The child was stopped (SIGSTOP, state T) when SIGTERM went out: SIGCONT followed it. */
  stoppedAtSigterm: boolean;
}

/** Process groups alive right now, killed on any exit path of the runner we can see. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Told of each shard's group and cgroup from the spawn until both were killed: the guardian, which kills them if the runner is SIGKILLed. */
export interface GroupWatcher {
  /** `pgid`: the shard child's pid; `cgroup`: its cgroup directory, null without one. */
  add(pgid: number, cgroup: string | null): void;
  remove(pgid: number): void;
}
let groupWatcher: GroupWatcher | null = null;

/** Sets (or with null, clears) the {@link GroupWatcher} of the shards spawned from now on. */
export function watchGroups(watcher: GroupWatcher | null): void {
  groupWatcher = watcher;
}

/**
 * SIGKILLs process groups and cgroups a dead runner left (the guardian's
 * clean-up): each group by its id, each cgroup through `cgroup.kill`.
 *
 * @returns how many of them still had a process to signal
 */
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
  // signal-exit runs this on normal exit, uncaught exceptions and fatal
  // signals; only SIGKILL of the runner escapes it (children run with
  // --no-orphans for that case).
  onExit(() => {
    killAllGroups("SIGKILL");
    // Also what left the groups and the cookie (a cleared environment).
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

/** Signals a whole process group; false when it no longer exists. */
function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * A supervised shard process. Create with {@link startProcess}; await
 * {@link ShardProcess.done} for the outcome.
 */
export class ShardProcess {
  state: ProcessState = "pending";
  readonly done: Promise<ProcessOutcome>;
  private child: ChildProcess | null = null;
  private killedBy: KillReason | null = null;
  /** A terminate/killNow that arrived while the process was still `pending`. */
  private pendingKill: { reason: KillReason; now: boolean } | null = null;
  private escalated = false;
  private stoppedAtSigterm = false;
  private timers: ReturnType<typeof setTimeout>[] = [];
  private readonly t0 = performance.now();
  private readonly startedAt = new Date();
  /** When SIGTERM went to the group, ms after the spawn (the clock of {@link elapsedMs}); null until then. */
  sigtermMs: number | null = null;
  /** When SIGKILL went to the group before the child exited (grace expired, second cancel); null unless it did. */
  sigkillMs: number | null = null;
  /** When the child had exited and its group was SIGKILLed and swept (nothing of it left to wait for), ms after the spawn; null until then. */
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

  /**
   * Starts the SIGTERM → grace → SIGKILL sequence for the whole group.
   * Idempotent; the first reason wins.
   */
  terminate(reason: KillReason): void {
    // Asked before the spawn completed: remember it and act once it runs.
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
    // Opened here, synchronously, so the log exists once startProcess returns. One that cannot be
    // opened must not cost the shard its run: the output goes to /dev/null, the log is marked incomplete.
    const log = openShardLog(this.spec.logPath);
    const logFd = log.fd;
    let child: ChildProcess;
    // Its cgroup (if any) is made before the spawn, so the move right after it is one write.
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
    // Every descendant still alive is a leak. When the child ended by itself
    // the cookie sweep runs first, so leaks inside the group are named in the
    // report too; after a kill by us the group goes first and only those that
    // left it are reported. Then the group SIGKILL as a backstop. Nothing
    // waits for the log's descriptor: such processes may still hold it.
    const sweep = () =>
      this.spec.cookie ? sweepCookie(this.spec.cookie, "exact", pgid, (pid) => meter.noteEscapee(pid)) : [];
    let leftovers: Escapee[] = [];
    if (this.killedBy === null) leftovers = sweep();
    signalGroup(pgid, "SIGKILL");
    liveGroups.delete(pgid);
    if (this.killedBy !== null) leftovers = sweep();
    // The last kill path: whatever is still in the shard's cgroup left the group and the cookie
    // (or the sweep missed it); the group's own members were killed with the group.
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

/** At most this many passes of one sweep; it stops sooner at a pass that finds no process it had not killed. */
export const SWEEP_PASSES = 8;

/**
 * SIGKILLs every process (other than this one) whose environment holds the
 * entry `cookie` (`exact`) or an entry starting with it (`prefix`), and the
 * process group of each one found outside `groupId` (a fork relay in its
 * own session changes pid every few hundred microseconds, but its group
 * stays, and a group signal reaches a child being forked too).
 *
 * Environment entries are inherited by every descendant and survive setsid
 * and double forks, which escape any process-group kill. Linux reads
 * /proc/<pid>/environ; macOS reads `ps eww`. Processes that cannot be read
 * (other users) are skipped. Passes repeat until one finds nothing new, at
 * most {@link SWEEP_PASSES}.
 *
 * @param groupId the shard child's pid and process group, which the caller
 *   SIGKILLs itself; only processes forked after it are read
 * @param beforeKill called with each pid found, just before it is killed
 *   (its resource usage is read then)
 * @returns the processes killed, one per pid
 */
export function sweepCookie(
  cookie: string,
  match: "exact" | "prefix",
  groupId?: number,
  beforeKill?: (pid: number) => void,
): Escapee[] {
  // A shard's descendants were forked after its child, whose pid is the group id.
  return sweepPasses(() => processesWithEnv(cookie, match, groupId), groupId, beforeKill);
}

/**
 * Kills shard processes of earlier runs whose runner is gone (it was
 * SIGKILLed, or slept through --no-orphans), with their groups, in passes as
 * {@link sweepCookie} does. A process belongs to a run by its cookie entry
 * (prefix `cookiePrefix`); the run's runner pid travels beside it in the
 * variable `runnerPidVar`. Also kills, through `cgroup.kill`, the members of
 * the shard cgroups dead runners left beside this one's (cgroups.ts
 * `staleShardCgroups`), which need no cookie.
 *
 * @returns the processes killed
 */
export function sweepStaleRuns(cookiePrefix: string, runnerPidVar: string): Escapee[] {
  const stale = () =>
    processesWithEnv(cookiePrefix, "prefix").filter((proc) => {
      const runner = Number(proc.env.get(runnerPidVar));
      return !(Number.isInteger(runner) && runner > 0 && isAlive(runner));
    });
  const killed = sweepPasses(stale, undefined).map((e) => ({ ...e, leftGroup: true }));
  // What a dead runner's shard cgroups still hold, cookie or not (its guardian died with it).
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
