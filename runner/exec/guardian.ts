/**
 * The run's guardian: a small process that outlives a runner killed with
 * SIGKILL just long enough to kill what the runner left (docs/architecture.md, "Runner death").
 *
 * Without it, a process that left its shard's group (setsid, double fork)
 * survives the runner's death: `--no-orphans` takes the shard child and its
 * group down, but not such a process, and only a later run's stale-run
 * sweep found it (if a later run came). The guardian runs in a session of
 * its own (so a signal to the runner's group or terminal does not reach it),
 * watches the runner through a pipe only the runner writes to and by its
 * pid, and when the runner dies without saying "done" sweeps the run's
 * cookie and kills the shards' process groups and cgroups the runner told
 * it of (so a process that cleared its environment but stayed in its
 * group or cgroup dies too). It costs one small Bun process per run, asleep on a pipe read.
 *
 * A sibling of exec/process.ts, which stays the only module that kills
 * (the guardian program calls its `sweepCookie`).
 *
 * Out of reach: a process that cleared or rewrote its environment (the
 * cookie) and also left its shard's process group, where the shard has no
 * cgroup (cgroup v2 not writable); and anything the guardian cannot signal
 * (another user's process).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { withoutDebuggerEnv } from "./bun-command.ts";
import type { GroupWatcher } from "./process.ts";
import { readProcStat } from "./proc-inspect.ts";
import { PACKAGE_ROOT } from "../util/package-root.ts";

/** The guardian program. */
const GUARDIAN_MAIN = path.join(PACKAGE_ROOT, "runner", "exec", "guardian-main.ts");

/** How long {@link Guardian.release} waits for the guardian to exit before SIGKILLing it, ms. */
const RELEASE_WAIT_MS = 1_000;

/**
 * A started guardian. As a {@link GroupWatcher} it is told of each shard's
 * process group and cgroup while they may hold processes (exec/process.ts
 * `watchGroups`), and kills those too when the runner dies.
 */
export interface Guardian extends GroupWatcher {
  /** Pid of the guardian process; null when it could not be started. */
  readonly pid: number | null;
  /**
   * The run ended and its own sweeps ran: the guardian exits without
   * touching anything. Resolves once it has exited (SIGKILLed after 1 s if
   * it has not), so it never outlives a run that ended normally. Idempotent.
   */
  release(): Promise<void>;
  /**
   * The run is being abandoned (the runner is failing): the guardian sweeps
   * the cookie now, as if the runner had died, and exits.
   */
  abandon(): void;
}

/**
 * Starts the guardian of a run: it SIGKILLs every process whose environment
 * has an entry starting with `cookiePrefix` (`SHARDGUARD_RUN=<run id>:`), and
 * the process groups and cgroups of the shards it was told of and not yet
 * told were gone, as soon as this process dies without calling
 * {@link Guardian.release}.
 *
 * Never throws: a guardian that cannot start leaves the run as it was
 * before guardians (the next run's stale-run sweep), with `pid` null.
 *
 * @param bun the Bun executable to run the guardian with (the runner's own)
 * @param env environment for the guardian (the runner's; it must not hold the cookie)
 */
export function startGuardian(
  cookiePrefix: string,
  bun = process.execPath,
  env: Record<string, string | undefined> = process.env,
): Guardian {
  let child: ChildProcess | null = null;
  try {
    const eq = cookiePrefix.indexOf("=");
    const args = [
      cookiePrefix.slice(0, eq),
      cookiePrefix.slice(eq + 1),
      String(process.pid),
      readProcStat(process.pid)?.start ?? "",
    ];
    if (eq <= 0 || args[1] === "") throw new Error(`not a NAME=value cookie prefix: ${cookiePrefix}`);
    child = spawn(bun, [GUARDIAN_MAIN, ...args], {
      // Its own session and process group: not reached by signals to ours.
      detached: true,
      // Never the runner's stdout or stderr: a CI step waits for those to close.
      stdio: ["pipe", "ignore", "ignore"],
      env: withoutDebuggerEnv(env),
    });
    child.on("error", () => {});
    child.stdin?.on("error", () => {});
    // Neither the process nor the pipe may keep the runner's event loop alive.
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  } catch {
    child = null;
  }
  const exited = child
    ? new Promise<void>((resolve) => {
        if (child!.exitCode !== null || child!.signalCode !== null) resolve();
        else child!.once("exit", () => resolve());
      })
    : Promise.resolve();
  let done = false;
  // One line per message (guardian-main.ts): "+ <pgid> <cgroup dir or nothing>", "- <pgid>", "done".
  const tell = (line: string) => {
    if (!done && child) child.stdin?.write(`${line}\n`);
  };
  return {
    pid: child?.pid ?? null,
    add(pgid, cgroup) {
      tell(`+ ${pgid} ${cgroup ?? ""}`);
    },
    remove(pgid) {
      tell(`- ${pgid}`);
    },
    async release() {
      if (done || !child) return;
      done = true;
      child.stdin?.end("done\n");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), RELEASE_WAIT_MS);
      });
      if ((await Promise.race([exited, late])) === "late") child.kill("SIGKILL");
      clearTimeout(timer);
    },
    abandon() {
      if (done || !child) return;
      done = true;
      child.stdin?.end();
    },
  };
}
