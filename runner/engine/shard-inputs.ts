/** What a run gives each shard (exec/shard-context.ts `ShardContext`): paths, settings, bunfig.toml, coverage. */
import { readBunfigTable } from "../config/load.ts";
import type { RunSettings } from "../config/settings-schema.ts";
import { coverageThreshold } from "../exec/coverage.ts";
import type { CostAdapter, ShardContext } from "../exec/shard.ts";
import type { PlannedShard } from "../plan/plan.ts";
import type { BunCapabilities } from "../results/bun-capabilities.ts";

/** What of the run, besides its settings, a shard is given. */
export interface ShardInputs {
  runId: string;
  env: Record<string, string | undefined>;
  shardEnv?: (shard: PlannedShard) => Record<string, string>;
  costAdapter?: CostAdapter | undefined;
  preload: string | undefined;
  capabilities: BunCapabilities;
}

/** The context every shard of a run is started with (reads the root's bunfig.toml once). */
export function shardContextFor(
  settings: RunSettings,
  run: ShardInputs,
  dirs: Pick<ShardContext, "logDir" | "junitDir" | "socketDir" | "handshakes" | "ensureDirs">,
) {
  return {
    runId: run.runId,
    root: settings.root,
    bun: settings.bun,
    bunArgs: settings.bunArgs,
    timeoutMs: settings.timeoutMs,
    graceMs: settings.graceMs,
    emptyFiles: settings.emptyFiles,
    logDir: dirs.logDir,
    junitDir: dirs.junitDir,
    socketDir: dirs.socketDir,
    env: run.env,
    ...(run.shardEnv ? { shardEnv: run.shardEnv } : {}),
    ...(run.costAdapter ? { costAdapter: run.costAdapter } : {}),
    handshakes: dirs.handshakes,
    preload: run.preload,
    coverageThreshold: coverageThreshold(settings.root, settings.bunArgs),
    capabilities: run.capabilities,
    bunfigRetry: run.capabilities.junitListsAttempts ? bunfigRetryOf(settings.root) : null,
    ensureDirs: dirs.ensureDirs,
  };
}

/**
 * `[test] retry` of the root's bunfig.toml, or null (also when it cannot be read: the settings were read from it
 * already).
 */
function bunfigRetryOf(root: string): number | null {
  try {
    return readBunfigTable(root).testRetry ?? null;
  } catch {
    return null;
  }
}
