/**
 * Starting a process that outlives shardguard (`shardguard bg`), and
 * running short helper commands (git, gh) to completion. Shard processes
 * are started and killed by exec/process.ts only; nothing here kills.
 */
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { withoutDebuggerEnv } from "./bun-command.ts";

/** What {@link startDetached} starts. */
export interface DetachedSpec {
  /** Executable and arguments (no shell). */
  argv: readonly string[];
  cwd: string;
  /** The whole environment of the new process. */
  env: Record<string, string | undefined>;
  /** File that receives stdout and stderr, opened for appending (mode 0600 when created). */
  logPath: string;
}

/**
 * Starts `spec.argv` in its own session (no SIGHUP when the terminal closes), stdin /dev/null, output appended
 * to `spec.logPath`, debugger variables left out; does not wait. Returns its pid; throws when it cannot start.
 */
export function startDetached(spec: DetachedSpec): number {
  const fd = openSync(spec.logPath, "a", 0o600);
  try {
    const child = spawn(spec.argv[0]!, spec.argv.slice(1), {
      cwd: spec.cwd,
      env: withoutDebuggerEnv(spec.env) as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["ignore", fd, fd],
    });
    if (child.pid === undefined) throw new Error(`could not start ${spec.argv[0]}`);
    child.unref();
    return child.pid;
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(fd);
  }
}

/** Outcome of {@link runTool}: `status` is null when the command could not run or timed out. */
export interface ToolResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a helper command (git, gh) without a shell; past `timeoutMs` it is killed, `status` null. Never throws. */
export function runTool(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number },
): ToolResult {
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    env: (options.env ?? process.env) as NodeJS.ProcessEnv,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: options.timeoutMs ?? 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return { status: result.error ? null : result.status, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
}
