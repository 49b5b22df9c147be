/**
 * The run's guardian: a process in its own session that outlives a SIGKILLed runner just long enough to
 * sweep the run's cookie and kill the groups and cgroups it was told of (docs/architecture.md, "Runner death").
 * Kills: only the guardian process itself when it outstays its release; its sweeps call process.ts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { withoutDebuggerEnv } from "./bun-command.ts";
import type { GroupWatcher } from "./process.ts";
import { readProcStat } from "./proc-inspect.ts";
import { PACKAGE_ROOT } from "../util/package-root.ts";

const GUARDIAN_MAIN = path.join(PACKAGE_ROOT, "runner", "exec", "guardian-main.ts");

/** How long {@link Guardian.release} waits for the guardian to exit before SIGKILLing it, ms. */
const RELEASE_WAIT_MS = 1_000;

/** A started guardian; as a {@link GroupWatcher} it is told of each shard's group and cgroup, and kills those too. */
export interface Guardian extends GroupWatcher {
  /** Pid of the guardian process; null when it could not be started. */
  readonly pid: number | null;
  /** The run ended and swept: the guardian exits touching nothing; resolves once it is gone. Idempotent. */
  release(): Promise<void>;
  /** The runner is failing: the guardian sweeps the cookie now, as if the runner had died, and exits. */
  abandon(): void;
}

/**
 * Starts a run's guardian, which kills what carries `cookiePrefix` and the groups it was told of once this
 * process dies without {@link Guardian.release}. Never throws: one that cannot start has `pid` null.
 * `bun`: the runner's Bun; `env`: the guardian's environment, which must not hold the cookie.
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
