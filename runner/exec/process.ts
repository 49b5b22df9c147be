/**
 * The only module that spawns and kills processes (with its sibling
 * exec/guardian.ts, which starts the run's guardian; the guardian kills
 * through {@link sweepCookie} here).
 *
 * A shard child runs detached (its own process group, so one signal reaches
 * every descendant that stayed in the group) with stdin from /dev/null.
 * Its stdout and stderr are spooled to a log file as they arrive; the parent
 * never holds a shard's output in memory.
 *
 * Kill sequence, after Bazel's test encyclopedia and Jest's worker: at the
 * wall-clock deadline SIGTERM the group, after the grace period SIGKILL the
 * group. When the child exits by itself the group is SIGKILLed anyway, since
 * grandchildren left behind would otherwise outlive the run. The outcome is
 * decided when the child exits: the pipes get a short bounded drain and are
 * then destroyed, because a grandchild that escaped the group may hold them
 * open forever.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { onExit } from "signal-exit";
import { isAlive, processesWithEnv } from "./proc-inspect.ts";

/**
 * Lifecycle of one shard process, in order. A process moves forward only.
 *
 * - `pending`: created, not spawned.
 * - `running`: spawned, no signal sent by us.
 * - `terminating`: SIGTERM sent to the group (deadline or cancel), grace running.
 * - `killing`: SIGKILL sent to the group.
 * - `draining`: the child exited; output pipes get a bounded drain.
 * - `finished`: pipes closed, log flushed, group swept; outcome final.
 * - `spawn-failed`: the OS refused to start it.
 */
export type ProcessState = "pending" | "running" | "terminating" | "killing" | "draining" | "finished" | "spawn-failed";

/** Why shardguard signalled a process group, if it did. */
export type KillReason = "timeout" | "cancel";

/** What to run and how to supervise it. Times in ms. */
export interface ProcessSpec {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /** Where every byte of stdout and stderr goes (appended; mode 0600). */
  logPath: string;
  /** Wall-clock limit from spawn, ms. */
  timeoutMs: number;
  /** SIGTERM → SIGKILL delay, ms. */
  graceMs: number;
  /** How long pipes may stay open after the child exits, ms (default 500). */
  drainMs?: number;
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
  /** Bytes written to the log. */
  logBytes: number;
  /** Set when the log could not be fully written (disk full, permissions). */
  logError: string | null;
  /** True when a pipe was still open after the drain and was cut. */
  pipesCut: boolean;
  /** Descendants still alive when the child exited (in or out of its group), killed by the sweep. */
  leftovers: Escapee[];
}

/** Process groups alive right now, killed on any exit path of the runner we can see. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // signal-exit runs this on normal exit, uncaught exceptions and fatal
  // signals; only SIGKILL of the runner escapes it (children run with
  // --no-orphans for that case).
  onExit(() => {
    killAllGroups("SIGKILL");
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
  private timers: ReturnType<typeof setTimeout>[] = [];
  private readonly t0 = performance.now();
  private readonly startedAt = new Date();
  private log: WriteStream;
  private logBytes = 0;
  private logError: string | null = null;
  /** Output read from the pipes and not yet handed to the log (see flushLog). */
  private pendingLog: Buffer[] = [];
  private pendingLogBytes = 0;
  private logFlushQueued = false;
  private waitingForDrain = false;
  private pipes: import("node:stream").Readable[] = [];

  constructor(private readonly spec: ProcessSpec) {
    installExitHook();
    this.log = createWriteStream(spec.logPath, { flags: "a", mode: 0o600 });
    this.log.on("error", (error) => {
      // A full disk must never change a verdict or crash the run: note it,
      // and keep reading the pipes (discarding) so the child never blocks.
      this.logError ??= error.message;
      this.child?.stdout?.resume();
      this.child?.stderr?.resume();
    });
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
    signalGroup(this.child.pid, "SIGTERM");
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
    signalGroup(this.child.pid, "SIGKILL");
  }

  private setState(state: ProcessState): void {
    this.state = state;
    this.spec.onState?.(state);
  }

  private async run(): Promise<ProcessOutcome> {
    const [command, ...args] = this.spec.argv;
    let child: ChildProcess;
    try {
      child = spawn(command!, args, {
        cwd: this.spec.cwd,
        env: this.spec.env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      return this.spawnFailed((error as Error).message);
    }
    this.child = child;
    const spawned = await new Promise<string | null>((resolve) => {
      child.once("spawn", () => resolve(null));
      child.once("error", (error) => resolve(error.message));
    });
    if (spawned !== null || !child.pid) return this.spawnFailed(spawned ?? "no pid");
    const pgid = child.pid;
    liveGroups.add(pgid);
    this.setState("running");
    if (this.pendingKill) {
      if (this.pendingKill.now) this.killNow(this.pendingKill.reason);
      else this.terminate(this.pendingKill.reason);
    }

    this.pipes = [child.stdout!, child.stderr!];
    for (const stream of this.pipes) {
      stream.on("data", (chunk: Buffer) => {
        this.logBytes += chunk.length;
        if (this.logError) return;
        this.pendingLog.push(chunk);
        this.pendingLogBytes += chunk.length;
        if (this.pendingLogBytes >= LOG_BATCH_BYTES) this.flushLog();
        else if (!this.logFlushQueued) {
          this.logFlushQueued = true;
          setImmediate(() => this.flushLog());
        }
      });
      stream.on("error", () => {});
    }

    this.timers.push(setTimeout(() => this.terminate("timeout"), this.spec.timeoutMs));

    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const durationMs = this.elapsedMs();
    for (const timer of this.timers) clearTimeout(timer);
    this.setState("draining");
    // Every descendant still alive is a leak. When the child ended by itself
    // the cookie sweep runs first, so leaks inside the group are named in the
    // report too; after a kill by us the group goes first and only those that
    // left it are reported. Then the group SIGKILL as a backstop. Both close
    // the pipes such processes may hold.
    const sweep = () => (this.spec.cookie ? sweepCookie(this.spec.cookie, "exact", pgid) : []);
    let leftovers: Escapee[] = [];
    if (this.killedBy === null) leftovers = sweep();
    signalGroup(pgid, "SIGKILL");
    liveGroups.delete(pgid);
    if (this.killedBy !== null) leftovers = sweep();
    const pipesCut = await this.drain(child);
    await this.closeLog();
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
      logBytes: this.logBytes,
      logError: this.logError,
      pipesCut,
      leftovers,
    };
  }

  /**
   * Ends the log and waits until it is closed, so a write error (disk full)
   * has been reported before the outcome is built.
   */
  /**
   * Writes the chunks read since the last flush as one buffer. A child that
   * prints a line per test (Bun's console reporter does) sends one small
   * chunk per line; one log write per chunk made the runner, and through
   * back-pressure the child, slow on files with many tests (bench/README.md).
   * Respects the disk: both pipes pause while the log catches up, so memory
   * stays bounded (at most LOG_BATCH_BYTES plus the stream's buffer) however
   * fast the child prints.
   */
  private flushLog(): void {
    this.logFlushQueued = false;
    if (this.pendingLog.length === 0) return;
    const chunk = this.pendingLog.length === 1 ? this.pendingLog[0]! : Buffer.concat(this.pendingLog, this.pendingLogBytes);
    this.pendingLog = [];
    this.pendingLogBytes = 0;
    if (this.logError || this.log.closed || this.log.destroyed || this.log.writableEnded) return;
    // The write callback sees errors the stream may not emit once ending.
    const accepted = this.log.write(chunk, (error) => {
      if (error) this.logError ??= error.message;
    });
    if (!accepted && !this.waitingForDrain) {
      this.waitingForDrain = true;
      for (const pipe of this.pipes) pipe.pause();
      this.log.once("drain", () => {
        this.waitingForDrain = false;
        for (const pipe of this.pipes) if (!pipe.destroyed) pipe.resume();
      });
    }
  }

  private closeLog(): Promise<void> {
    this.flushLog();
    const log = this.log;
    if (log.closed || log.destroyed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      log.once("close", () => resolve());
      log.end();
    });
  }

  /** Waits up to drainMs for both pipes to end, then destroys them. True if one was cut. */
  private async drain(child: ChildProcess): Promise<boolean> {
    const streams = [child.stdout!, child.stderr!];
    const ended = Promise.all(
      streams.map((s) => (s.readableEnded || s.destroyed ? Promise.resolve() : new Promise<void>((r) => { s.once("end", r); s.once("close", r); }))),
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"cut">((resolve) => {
      timer = setTimeout(() => resolve("cut"), this.spec.drainMs ?? 500);
    });
    const result = await Promise.race([ended.then(() => "ended" as const), timedOut]);
    clearTimeout(timer);
    for (const s of streams) {
      s.removeAllListeners("data");
      s.destroy();
    }
    return result === "cut";
  }

  private spawnFailed(message: string): ProcessOutcome {
    this.setState("spawn-failed");
    this.log.end();
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
      pipesCut: false,
      leftovers: [],
    };
  }
}

/** Output batched into one log write once this many bytes are pending. */
const LOG_BATCH_BYTES = 64 * 1024;

/** Spawns a supervised shard process; see {@link ShardProcess}. */
export function startProcess(spec: ProcessSpec): ShardProcess {
  return new ShardProcess(spec);
}

/**
 * SIGKILLs every process (other than this one) whose environment holds the
 * entry `cookie` (`exact`) or an entry starting with it (`prefix`).
 *
 * Environment entries are inherited by every descendant and survive setsid
 * and double forks, which escape any process-group kill. Linux reads
 * /proc/<pid>/environ; macOS reads `ps eww`. Processes that cannot be read
 * (other users) are skipped.
 *
 * @returns the processes killed
 */
export function sweepCookie(cookie: string, match: "exact" | "prefix", groupId?: number): Escapee[] {
  const killed: Escapee[] = [];
  // A shard's descendants were forked after its child, whose pid is the group id.
  for (const proc of processesWithEnv(cookie, match, groupId)) {
    try {
      process.kill(proc.pid, "SIGKILL");
      killed.push({ pid: proc.pid, command: proc.command, leftGroup: groupId !== undefined && proc.pgid !== groupId });
    } catch {
      // Gone already.
    }
  }
  return killed;
}

/**
 * Kills shard processes of earlier runs whose runner is gone (it was
 * SIGKILLed, or slept through --no-orphans). A process belongs to a run by
 * its cookie entry (prefix `cookiePrefix`); the run's runner pid travels
 * beside it in the variable `runnerPidVar`.
 *
 * @returns the processes killed
 */
export function sweepStaleRuns(cookiePrefix: string, runnerPidVar: string): Escapee[] {
  const killed: Escapee[] = [];
  for (const proc of processesWithEnv(cookiePrefix, "prefix")) {
    const runner = Number(proc.env.get(runnerPidVar));
    if (Number.isInteger(runner) && runner > 0 && isAlive(runner)) continue;
    try {
      process.kill(proc.pid, "SIGKILL");
      killed.push({ pid: proc.pid, command: proc.command, leftGroup: true });
    } catch {
      // Already gone.
    }
  }
  return killed;
}
