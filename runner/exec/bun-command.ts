/**
 * The command line and environment of one shard child.
 */
import path from "node:path";
import { PACKAGE_ROOT } from "../util/package-root.ts";

/** Environment variable set in every shard child (and inherited by its descendants). */
export const SHARD_ENV = {
  /** `<runId>:<shard index>`: marks a process as belonging to a shard of a run. */
  cookie: "SHARDGUARD_RUN",
  /** "1" inside shard children: the preset preload must never take over there. */
  inShard: "SHARDGUARD_SHARD",
  /** Pid of the runner; a cookie whose runner is dead belongs to a stale run. */
  runnerPid: "SHARDGUARD_RUNNER_PID",
  /** File the child preload appends one byte to per test start. */
  marks: "SHARDGUARD_MARKS",
  /** "1" when the child preload should yield around tests so events drain. */
  yieldEvents: "SHARDGUARD_YIELD",
  /** Files of a shard run with `--isolate`, when more than one: the preload then runs once per file (runner/child/shard-preload.ts, 4.). */
  isolateFiles: "SHARDGUARD_ISOLATE_FILES",
  /**
   * The shard's cgroup v2 directory (exec/resource-usage.ts): the preload
   * joins it itself when it runs before the runner's move has landed.
   */
  cgroup: "SHARDGUARD_CGROUP",
} as const;

/** True when the user's flags run each file of a shard in a fresh global (`--isolate`; `--no-isolate` after it turns it off). */
export function isolates(bunArgs: readonly string[]): boolean {
  const i = bunArgs.lastIndexOf("--isolate");
  return i >= 0 && bunArgs.lastIndexOf("--no-isolate") < i;
}

/**
 * The per-shard environment an `--isolate` run adds: the shard's file count
 * ({@link SHARD_ENV}.isolateFiles) when it has more than one, so the child
 * preload knows which file of the batch it runs for; nothing otherwise.
 */
export function isolateEnv(bunArgs: readonly string[], files: number): Record<string, string> {
  return isolates(bunArgs) && files > 1 ? { [SHARD_ENV.isolateFiles]: String(files) } : {};
}

/** Absolute path of the child preload (test-start marks, event draining). */
export const SHARD_PRELOAD = path.join(PACKAGE_ROOT, "runner", "child", "shard-preload.ts");

/** Inputs of {@link shardArgv}. Paths absolute. */
export interface CommandInputs {
  bun: string;
  root: string;
  /** Planned files, relative to root. */
  files: readonly string[];
  /** Where Bun writes this shard's JUnit report. */
  junitPath: string;
  /** User flags for `bun test`, passed unchanged. */
  bunArgs: readonly string[];
  /** The child preload to load; {@link SHARD_PRELOAD} when absent (exec/coverage.ts places a copy where Bun's coverage does not count it). */
  preload?: string;
  /** Whether this Bun has `--no-orphans` (results/bun-capabilities.ts); default true. */
  noOrphans?: boolean;
}

/** The variable that makes a Bun child dial an inspector socket in Bun's `connect` mode. */
export const INSPECT_CONNECT_ENV = "BUN_INSPECT_CONNECT_TO";

/**
 * Debugger variables a shard child never inherits: `BUN_INSPECT` makes every
 * Bun process listen at the one address it names (an editor's debug terminal
 * sets `…?wait=1`, so each shard would wait for a debugger until its timeout;
 * a second listener on it fails every file before any test registers), and
 * `BUN_INSPECT_NOTIFY` tells that debugger each child started. Both were
 * measured on Bun 1.4.4 (docs/bun-behaviour.md). `BUN_INSPECT_PRELOAD`, a
 * preload, is passed on like any preload.
 */
export const DEBUGGER_ENV = ["BUN_INSPECT", "BUN_INSPECT_NOTIFY"] as const;

/**
 * `env` without the {@link DEBUGGER_ENV} variables, for every Bun process
 * the runner starts besides shards (the run's guardian, a `bg` run): each
 * would listen at the debugger address its parent already holds, and the
 * guardian died of it at its start (measured on Bun 1.4.4).
 */
export function withoutDebuggerEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const copy = { ...env };
  for (const name of DEBUGGER_ENV) delete copy[name];
  return copy;
}

/**
 * The environment that turns a shard child's test events on:
 * `BUN_INSPECT_CONNECT_TO=unix://<socketPath>` (absolute path), or nothing
 * when `socketPath` is null (events off; an inherited value is removed).
 * The {@link DEBUGGER_ENV} variables are removed either way.
 *
 * Why not `--inspect-wait=unix:<path>`: any inspector flag puts Bun in
 * debugging mode, whose transpiler stops inlining and minifying, so a
 * function's `toString()` differs from plain `bun test` (elysia's source
 * analysis failed on it) and `process.execArgv` shows the flag. The
 * variable's `connect` mode leaves both as they are (measured on Bun 1.3.13
 * to 1.4.5, docs/bun-behaviour.md). It does not hold the tests until a
 * debugger attaches; the shard preload does (runner/child/shard-preload.ts).
 */
export function inspectorEnv(socketPath: string | null): Record<string, string | undefined> {
  const cleared = Object.fromEntries(DEBUGGER_ENV.map((name) => [name, undefined]));
  return { ...cleared, [INSPECT_CONNECT_ENV]: socketPath ? `unix://${socketPath}` : undefined };
}

/**
 * Builds `bun --no-orphans test --preload <shard preload> <abs files> <user flags> --reporter=junit --reporter-outfile=…`.
 * Test events are turned on by the environment ({@link inspectorEnv}), not the command line.
 *
 * Files are passed as absolute paths because Bun reads positional arguments
 * as substring filters, not paths (docs/bun-behaviour.md). `--no-orphans` makes the child
 * exit, and kill its descendants, if the runner itself dies. Our reporter
 * flags come last so a user's own `--reporter` cannot take the JUnit away.
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

/** True when the user's flags filter tests by name (`-t` / `--test-name-pattern`). */
export function filtersByName(bunArgs: readonly string[]): boolean {
  return bunArgs.some(
    (a) => a === "-t" || a === "--test-name-pattern" || a.startsWith("-t=") || a.startsWith("--test-name-pattern="),
  );
}

/** True when the user's flags include `--pass-with-no-tests`. */
export function passesWithNoTests(bunArgs: readonly string[]): boolean {
  return bunArgs.includes("--pass-with-no-tests");
}

/** True when the user's flags include `--bail` (Bun stops the run after the first failure, or after N with `--bail=N`). */
export function bails(bunArgs: readonly string[]): boolean {
  return bunArgs.some((a) => a === "--bail" || a.startsWith("--bail="));
}

/**
 * The retry count of the user's flags (`--retry N`, `--retry=N`; the last
 * one wins, as in Bun), or null when they set none or it is unreadable.
 */
export function retryCount(bunArgs: readonly string[]): number | null {
  let found: number | null = null;
  bunArgs.forEach((a, i) => {
    const text = a === "--retry" ? bunArgs[i + 1] : a.startsWith("--retry=") ? a.slice("--retry=".length) : undefined;
    if (text === undefined) return;
    found = /^\d+$/.test(text) ? Number(text) : null;
  });
  return found;
}
