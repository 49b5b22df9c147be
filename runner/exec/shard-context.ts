/** What a run gives each of its shards: shared paths and settings, the hooks it listens on, a live view. */
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
  junitDir: string;
  /** Private (0700) directory for inspector sockets; null when events are off. */
  socketDir: string | null;
  env: Record<string, string | undefined>;
  /** Per-shard environment additions (presets), merged over `env`. */
  shardEnv?: (shard: PlannedShard) => Record<string, string>;
  /** A preset's cost adapter (docs/cost.md, "Adapters"): the eval directory it reads for each shard. */
  costAdapter?: CostAdapter;
  /** The run's pending handshakes, which a shard's evidence and verdict wait for; none: they never wait. */
  handshakes?: HandshakeGate;
  /** The child preload the shards load (exec/coverage.ts); SHARD_PRELOAD when absent. */
  preload?: string;
  /** The coverage threshold Bun enforces in the shards; null or absent: none. */
  coverageThreshold?: string | null;
  /** What the shards' Bun can do; default: the pinned Bun's. */
  capabilities?: BunCapabilities;
  /** `[test] retry` of the root's bunfig.toml, when set: Bun retries by it too. */
  bunfigRetry?: number | null;
  /** How a file that registers no tests is judged (`empty-files`); absent: "pass". */
  emptyFiles?: "pass" | "fail";
  /** Remakes run directories a test may have deleted, before each spawn and at a child's end of run. Throws. */
  ensureDirs?: () => void;
}

/** Which adapter reads a shard's spend besides its cost file, and where (a preset's `cost-adapter`). */
export interface CostAdapter {
  adapter: "gstack-eval";
  /** The shard's eval directory (absolute): what the preset sets as its shard directory. */
  dirOf: (shard: PlannedShard) => string;
}

/** Live view of a running shard, for progress displays. */
export interface RunningShard {
  shard: PlannedShard;
  process: ShardProcess;
  logPath: string;
  /** The test in flight by the events, with its start (performance.now() ms); null when none or no events. */
  inFlight(): { name: string; startedAtMs: number | undefined } | null;
  /** Dollars its cost lines recorded so far (docs/cost.md). */
  spentUsd(): number;
}

/** Hooks the caller gets while a shard runs. */
export interface ShardHooks {
  /** Each child spawned (a shard run again without events spawns twice). */
  onStart?: (running: RunningShard) => void;
  onWarning?: (shard: PlannedShard, message: string) => void;
  /** Each child spawned, at once, so a racing cancel reaches it; what it returns is called once the group is gone. */
  register: (process: ShardProcess) => () => void;
  /**
   * At most once per shard: its last attempt's group is gone, so the slot may go on while the verdict is
   * decided. Not called when the last attempt stopped before a spawn or threw: the shard's return frees it.
   */
  onSlotFree?: () => void;
}

/** The paths of one shard's run: its log, Bun's JUnit, the preload's marks, its cost file. */
export interface ShardPaths {
  log: string;
  junit: string;
  marks: string;
  /** `SHARDGUARD_COST_FILE` of its child (docs/cost.md). */
  cost: string;
}

/** The paths of `shard` in the run's directories. */
export function shardPaths(ctx: ShardContext, shard: PlannedShard): ShardPaths {
  return {
    log: path.join(ctx.logDir, `shard-${shard.index}-${shard.slug}.log`),
    junit: path.join(ctx.junitDir, `shard-${shard.index}.xml`),
    marks: path.join(ctx.junitDir, `shard-${shard.index}.marks`),
    cost: path.join(ctx.junitDir, `shard-${shard.index}.cost.jsonl`),
  };
}
