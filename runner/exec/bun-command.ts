/** The command line and environment of one shard child. */
import path from "node:path";
import { PACKAGE_ROOT } from "../util/package-root.ts";

/** Environment variables set in every shard child (and inherited by its descendants). */
export const SHARD_ENV = {
  /** `<runId>:<shard index>`: marks a process as belonging to a shard of a run. */
  cookie: "SHARDGUARD_RUN",
  /** "1" inside shard children: the preset preload must never take over there. */
  inShard: "SHARDGUARD_SHARD",
  /** Pid of the runner; a cookie whose runner is dead belongs to a stale run. */
  runnerPid: "SHARDGUARD_RUNNER_PID",
  marks: "SHARDGUARD_MARKS",
  yieldEvents: "SHARDGUARD_YIELD",
  /** A shard's file count under `--isolate`, when more than one: the preload then runs once per file. */
  isolateFiles: "SHARDGUARD_ISOLATE_FILES",
  /** The shard's cgroup (exec/resource-usage.ts), for the preload to join if it runs before the move lands. */
  cgroup: "SHARDGUARD_CGROUP",
} as const;

/** The user's flags run each file in a fresh global (`--isolate`, unless a later `--no-isolate`). */
export function isolates(bunArgs: readonly string[]): boolean {
  const i = bunArgs.lastIndexOf("--isolate");
  return i >= 0 && bunArgs.lastIndexOf("--no-isolate") < i;
}

/** The environment an `--isolate` run adds: the shard's file count when more than one, else nothing. */
export function isolateEnv(bunArgs: readonly string[], files: number): Record<string, string> {
  return isolates(bunArgs) && files > 1 ? { [SHARD_ENV.isolateFiles]: String(files) } : {};
}

/** Absolute path of the child preload. */
export const SHARD_PRELOAD = path.join(PACKAGE_ROOT, "runner", "child", "shard-preload.ts");

/** Inputs of {@link shardArgv}. Paths absolute. */
export interface CommandInputs {
  bun: string;
  root: string;
  /** Planned files, relative to root. */
  files: readonly string[];
  junitPath: string;
  /** User flags for `bun test`, passed unchanged. */
  bunArgs: readonly string[];
  /** The child preload; {@link SHARD_PRELOAD} when absent (exec/coverage.ts places a copy coverage ignores). */
  preload?: string;
  /** Whether this Bun has `--no-orphans` (results/bun-capabilities.ts); default true. */
  noOrphans?: boolean;
}

/** The variable that makes a Bun child dial an inspector socket in Bun's `connect` mode. */
export const INSPECT_CONNECT_ENV = "BUN_INSPECT_CONNECT_TO";

/**
 * Debugger variables a shard child never inherits: each Bun would listen at the one address they name
 * (and may wait there for a debugger), failing the shard (docs/bun-behaviour.md).
 */
export const DEBUGGER_ENV = ["BUN_INSPECT", "BUN_INSPECT_NOTIFY"] as const;

/** `env` without {@link DEBUGGER_ENV}, for the Bun processes the runner starts besides shards (guardian, `bg`). */
export function withoutDebuggerEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const copy = { ...env };
  for (const name of DEBUGGER_ENV) delete copy[name];
  return copy;
}

/**
 * The environment that turns a shard's test events on (`BUN_INSPECT_CONNECT_TO=unix://<socketPath>`), or
 * removes an inherited one when null; {@link DEBUGGER_ENV} goes either way. Not `--inspect-wait`: any inspector
 * flag puts Bun in debugging mode, which changes `toString()` and `execArgv` (docs/bun-behaviour.md).
 */
export function inspectorEnv(socketPath: string | null): Record<string, string | undefined> {
  const cleared = Object.fromEntries(DEBUGGER_ENV.map((name) => [name, undefined]));
  return { ...cleared, [INSPECT_CONNECT_ENV]: socketPath ? `unix://${socketPath}` : undefined };
}

/**
 * `bun --no-orphans test --preload <preload> <abs files> <user flags> --reporter=junit --reporter-outfile=…`.
 * Files are absolute since Bun reads positionals as substring filters (docs/bun-behaviour.md); our
 * reporter flags come last so a user's `--reporter` cannot take the JUnit away.
 */
export function shardArgv(inputs: CommandInputs): string[] {
  const argv = [inputs.bun];
  // Bun 1.3.13 has no --no-orphans (it would ignore it): the guardian covers a runner's death there.
  if (inputs.noOrphans !== false) argv.push("--no-orphans");
  argv.push("test", "--preload", inputs.preload ?? SHARD_PRELOAD);
  for (const file of inputs.files) argv.push(path.resolve(inputs.root, file));
  argv.push(...inputs.bunArgs);
  argv.push("--reporter=junit", `--reporter-outfile=${inputs.junitPath}`);
  return argv;
}

/** The user's flags filter tests by name (`-t` / `--test-name-pattern`). */
export function filtersByName(bunArgs: readonly string[]): boolean {
  return bunArgs.some(
    (a) => a === "-t" || a === "--test-name-pattern" || a.startsWith("-t=") || a.startsWith("--test-name-pattern="),
  );
}

/** The user's flags include `--pass-with-no-tests`. */
export function passesWithNoTests(bunArgs: readonly string[]): boolean {
  return bunArgs.includes("--pass-with-no-tests");
}

/** The user's flags include `--bail` (or `--bail=N`). */
export function bails(bunArgs: readonly string[]): boolean {
  return bunArgs.some((a) => a === "--bail" || a.startsWith("--bail="));
}

/** The retry count of the user's flags (the last `--retry` wins, as in Bun); null when none or unreadable. */
export function retryCount(bunArgs: readonly string[]): number | null {
  let found: number | null = null;
  bunArgs.forEach((a, i) => {
    const text = a === "--retry" ? bunArgs[i + 1] : a.startsWith("--retry=") ? a.slice("--retry=".length) : undefined;
    if (text === undefined) return;
    found = /^\d+$/.test(text) ? Number(text) : null;
  });
  return found;
}
