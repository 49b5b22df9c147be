/**
 * What a run gives each of its shards (exec/shard.ts, exec/shard-attempt.ts):
 * the paths and settings they share, the hooks it listens on, the live view
 * of a running shard for progress displays.
 */
import path from "node:path";
import type { PlannedShard } from "../plan/plan.ts";
import type { BunCapabilities } from "../results/bun-capabilities.ts";
import type { HandshakeGate } from "./handshake-gate.ts";
import type { ShardProcess } from "./process.ts";

/** Paths and settings shared by every shard of a run. */
export interface ShardContext {
  runId: string;
  root: string;
  bun: string;
  bunArgs: readonly string[];
  timeoutMs: number;
  graceMs: number;
  logDir: string;
  /** Private directory for Bun's per-shard JUnit files. */
  junitDir: string;
  /** Private (0700) directory for inspector sockets; null when events are off. */
  socketDir: string | null;
  env: Record<string, string | undefined>;
  /** Per-shard environment additions (presets), merged over `env`. */
  shardEnv?: (shard: PlannedShard) => Record<string, string>;
  /** The run's pending handshakes, which a shard's evidence and verdict wait for (exec/handshake-gate.ts); none: they never wait. */
  handshakes?: HandshakeGate;
  /** The child preload the shards load (exec/coverage.ts); SHARD_PRELOAD when absent. */
  preload?: string;
  /** The coverage threshold Bun enforces in the shards (exec/coverage.ts `coverageThreshold`); null or absent: none. */
  coverageThreshold?: string | null;
  /** What the shards' Bun can do; default: the pinned Bun's (results/bun-capabilities.ts `PINNED_CAPABILITIES`). */
  capabilities?: BunCapabilities;
  /** `[test] retry` of the root's bunfig.toml, when set: Bun retries by it too. */
  bunfigRetry?: number | null;
  /** How a file that registers no tests is judged (the `empty-files` setting); absent: "pass". */
  emptyFiles?: "pass" | "fail";
  /**
   * Makes again the run's directories (and what else a shard needs there)
   * that a test may have deleted: called before each spawn and when a
   * child reaches its end of run. Throws when they cannot be made.
   */
  ensureDirs?: () => void;
}

/** Live view of a running shard, for progress displays. */
export interface RunningShard {
  shard: PlannedShard;
  process: ShardProcess;
  logPath: string;
  /**
   * The test in flight by the inspector events: its full name and when it
   * started (performance.now() ms; undefined when unknown). Null when none
   * runs, or the shard has no events.
   */
  inFlight(): { name: string; startedAtMs: number | undefined } | null;
}

/** Hooks the caller gets while a shard runs. */
export interface ShardHooks {
  /** Each child spawned (a shard run again without events spawns twice). */
  onStart?: (running: RunningShard) => void;
  onWarning?: (shard: PlannedShard, message: string) => void;
  /**
   * Each child spawned, at once, so a cancel reaches it even when it raced
   * the spawn. The call returned is made once its process group is gone.
   */
  register: (process: ShardProcess) => () => void;
  /**
   * Once per shard at most: the process group of its last attempt is gone,
   * so its job slot may go to the next shard while its evidence is read and
   * its verdict decided (also after a spawn the OS refused). Not called
   * when its last attempt stopped before a spawn (cancelled) or threw: the
   * shard's return frees its slot then.
   */
  onSlotFree?: () => void;
}

/** The paths of one shard's run: its log, Bun's JUnit, the preload's marks. */
export interface ShardPaths {
  log: string;
  junit: string;
  marks: string;
}

/** The paths of `shard` in the run's directories. */
export function shardPaths(ctx: ShardContext, shard: PlannedShard): ShardPaths {
  return {
    log: path.join(ctx.logDir, `shard-${shard.index}-${shard.slug}.log`),
    junit: path.join(ctx.junitDir, `shard-${shard.index}.xml`),
    marks: path.join(ctx.junitDir, `shard-${shard.index}.marks`),
  };
}
