/** Runs one planned shard end to end: an attempt, a second without events if the channel failed first, the verdict. */
import type { PlannedShard } from "../plan/plan.ts";
import { PINNED_CAPABILITIES } from "../results/bun-capabilities.ts";
import type { ShardResult } from "../results/report-model.ts";
import { neverStarted } from "../results/verdict.ts";
import { withCost } from "../results/cost-apply.ts";
import { bails, filtersByName, passesWithNoTests, retryCount } from "./bun-command.ts";
import { ShardAttempt } from "./shard-attempt.ts";
import { shardPaths, type ShardContext, type ShardHooks, type ShardPaths } from "./shard-context.ts";
import {
  consoleErrorOf,
  decideShardResult,
  filesMarkedStarted,
  filesNotStarted,
  readShardJUnit,
  type AttemptRecord,
  type VerdictSettings,
} from "./shard-evidence.ts";

export { CONNECT_TIMEOUT_MS } from "./shard-attempt.ts";
export type { CostAdapter, RunningShard, ShardContext, ShardHooks } from "./shard-context.ts";

/** A shard's result, and the planned files in which no test started. */
export interface ShardOutcome {
  result: ShardResult;
  /** Planned files of a started shard with no test start marked; empty when the shard never started. */
  filesNotStarted: string[];
}

/** What {@link runShard} needs. */
export interface RunShardOptions {
  ctx: ShardContext;
  shard: PlannedShard;
  hooks: ShardHooks;
  /** The cancelling signal's name once the run is cancelled, else null. */
  cancelled: () => string | null;
}

/** Runs one shard to its final result; a spawn failure is never-started. Rejects on our own failures (disk, socket). */
export function runShard(options: RunShardOptions): Promise<ShardOutcome> {
  return new ShardRun(options).run();
}

/** One shard's attempts and verdict. */
class ShardRun {
  private readonly paths: ShardPaths;
  /** Why the shard has no per-test events, once its event channel failed. */
  private channelProblem: string | null = null;

  constructor(private readonly o: RunShardOptions) {
    this.paths = shardPaths(o.ctx, o.shard);
  }

  async run(): Promise<ShardOutcome> {
    const record = await this.attempts();
    if (record === null) {
      const signal = this.o.cancelled();
      return {
        result: neverStarted(
          this.o.shard,
          `run cancelled${signal ? ` (${signal})` : ""} before its tests started`,
          this.paths.log,
        ),
        filesNotStarted: [],
      };
    }
    return this.decide(record);
  }

  /** The attempt with events, again without if its channel failed first; the record of the one that ran, or null. */
  private async attempts(): Promise<AttemptRecord | null> {
    const first = await this.attempt(this.o.ctx.socketDir !== null);
    if (first.kind === "ran") return first.record;
    this.channelProblem = first.problem;
    if (this.o.cancelled()) return null;
    this.o.hooks.onWarning?.(this.o.shard, `no per-test events (${first.problem}); running it again without them`);
    const second = await this.attempt(false);
    return second.kind === "ran" ? second.record : null;
  }

  private attempt(withEvents: boolean) {
    const { ctx, shard, hooks, cancelled } = this.o;
    return new ShardAttempt({ ctx, shard, paths: this.paths, withEvents, hooks, cancelled }).run();
  }

  /** Reads what is left on disk and decides the shard's result from all of it. */
  private async decide(record: AttemptRecord): Promise<ShardOutcome> {
    const { ctx, shard } = this.o;
    const junit = await readShardJUnit(this.paths.junit, shard, ctx.root, record);
    const consoleError = await consoleErrorOf(this.paths.log, record, junit);
    const filesStarted = await filesMarkedStarted(ctx.root, shard.files, record);
    const decided = decideShardResult({
      shard,
      record,
      junit,
      filesStarted,
      ...(consoleError ? { consoleError } : {}),
      eventsProblem: record.requestProblem ?? this.channelProblem,
      cancelSignal: this.o.cancelled(),
      logPath: this.paths.log,
      settings: this.verdictSettings(),
    });
    const result = withCost(decided, record.cost, record.evalCost);
    return { result, filesNotStarted: filesNotStarted(shard.files, record, filesStarted) };
  }

  private verdictSettings(): VerdictSettings {
    const { ctx } = this.o;
    const caps = ctx.capabilities ?? PINNED_CAPABILITIES;
    return {
      timeoutMs: ctx.timeoutMs,
      graceMs: ctx.graceMs,
      passWithNoTests: passesWithNoTests(ctx.bunArgs),
      emptyFiles: ctx.emptyFiles ?? "pass",
      nameFilter: filtersByName(ctx.bunArgs),
      bail: bails(ctx.bunArgs),
      ...(caps.junitListsAttempts ? { junitAttempts: { maxAttempts: this.attemptsPerTest() } } : {}),
      ...(ctx.coverageThreshold ? { coverageThreshold: ctx.coverageThreshold } : {}),
    };
  }

  /**
   * Attempts a retried test gets (retry count + 1, flags over bunfig.toml, as in Bun), or null when no retry count is
   * known.
   */
  private attemptsPerTest(): number | null {
    const retry = retryCount(this.o.ctx.bunArgs) ?? this.o.ctx.bunfigRetry ?? null;
    return retry === null ? null : retry + 1;
  }
}
