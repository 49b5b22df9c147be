/**
 * The preset preload's take-over: decides (presets/intercept-decision.ts) whether this `bun test` is ours and runs
 * the preset. Only the decision module loads up front; the runner only on take-over.
 */
import { decideInterception, readCommandLine } from "../presets/intercept-decision.ts";
import type { Host } from "../engine/host.ts";

/** The preload's view of its process (the CLI host plus process ids); injectable for tests. */
export interface InterceptHost extends Host {
  pid: number;
  ppid: number;
  readCommandLine?: (pid: number) => string[] | null;
}

/**
 * Entry point of the preload.
 * @returns null when `bun test` goes on as usual; else the exit code (2 for any
 * usage or configuration error, one line on stderr, no child started)
 */
export async function interceptBunTest(host: InterceptHost): Promise<number | null> {
  const read = host.readCommandLine ?? ((pid: number) => readCommandLine(pid));
  try {
    const decision = await decideInterception({
      argv: read(host.pid),
      env: host.env,
      cwd: host.cwd,
      parentArgv: () => read(host.ppid),
    });
    if (decision.action === "none") return null;
    if (decision.action === "refuse") {
      host.stderr(`shardguard: ${decision.message}`);
      return 2;
    }
    const { parseArgs } = await import("../config/args.ts");
    const { preparePresetRun } = await import("../presets/session.ts");
    const { runPreparedPreset } = await import("./preset-run.ts");
    const { takeOverBunPlanFlags } = await import("./bun-plan-flags.ts");
    const taken = takeOverBunPlanFlags(decision.flags);
    const prepared = await preparePresetRun({
      name: decision.preset,
      via: decision.via,
      cwd: host.cwd,
      env: host.env,
      args: parseArgs(taken.runArgs, "run"),
      ...(decision.tier !== null ? { tier: decision.tier } : {}),
      tierDefault: decision.tierDefault,
      files: decision.files,
      commandFlags: taken.shardFlags,
      // A legacy `bun test FILE...` line keeps its meaning: its flags, not the preset's.
      lineFlagsOnly: decision.via !== "--preset",
      flagsWhere: "bun test",
    });
    if (decision.tierSplit) {
      // Bun does not know --tier: it took the value for a path filter and printed that file's header already.
      host.stdout(
        `shardguard: note: Bun read "${decision.tier}" after --tier as a test path filter, so the file name Bun ` +
          `printed above may be unrelated (no test of it ran); write --tier=${decision.tier}`,
      );
    }
    return await runPreparedPreset("run", prepared, host, null);
  } catch (error) {
    // ConfigError, matched by name so the plain `bun test` path never loads its module (and zod).
    if (error instanceof Error && error.name === "ConfigError") {
      host.stderr(`shardguard: ${error.message}`);
      // Earlier reports must not pass for this run's (docs/reports.md).
      (await import("../engine/refused.ts")).settleRefusal([], host, error.message);
      return 2;
    }
    throw error;
  }
}
