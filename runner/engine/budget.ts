/** The run's dollar budget (docs/cost.md, "Budget"): what was spent so far, and whether a further shard may start. */
import { roundUsd } from "../cost/ledger.ts";
import { summarizeCost, usdText } from "../results/cost-apply.ts";
import type { RunCost } from "../results/cost-model.ts";
import type { ShardResult } from "../results/report-model.ts";

/** How often `--budget-kill` checks the spend while shards run, ms: each check reads every running cost file. */
export const BUDGET_CHECK_MS = 250;

/** What the budget reads: the shards decided, and the live spend of those running. */
export interface SpendSources {
  decided: { values(): Iterable<ShardResult> };
  /** Dollars recorded so far by each running shard (exec/cost-file.ts reads its file on each call). */
  running: { values(): Iterable<{ spentUsd(): number }> };
}

/** The run's budget over its decided and running shards (the run's maps, read live); null without a limit. */
export function budgetFor(
  limitUsd: number | null | undefined,
  decided: SpendSources["decided"],
  running: SpendSources["running"],
): RunBudget | null {
  return limitUsd ? new RunBudget(limitUsd, { decided, running }) : null;
}

/** A budget of `limitUsd` dollars over a run's shards; reached once spent ≥ limit. */
export class RunBudget {
  /** The spend when the budget was first seen reached; null while it is not. */
  private reachedAt: number | null = null;
  private killed = false;

  constructor(
    readonly limitUsd: number,
    private readonly sources: SpendSources,
  ) {}

  /** Dollars recorded by decided and running shards. */
  spent(): number {
    let usd = 0;
    for (const shard of this.sources.decided.values()) usd += shard.cost?.usd ?? 0;
    for (const shard of this.sources.running.values()) usd += shard.spentUsd();
    return roundUsd(usd);
  }

  /** Whether spend has reached the limit; once true it stays true (spend never falls). */
  reached(): boolean {
    if (this.reachedAt !== null) return true;
    const spent = this.spent();
    if (spent >= this.limitUsd) this.reachedAt = spent;
    return this.reachedAt !== null;
  }

  /**
   * With `kill`, checks the spend every {@link BUDGET_CHECK_MS} and, once reached, calls `end` on each running
   * shard's process (the normal SIGTERM, grace, SIGKILL of exec/process.ts). Returns the stop of the check.
   */
  watch(kill: boolean, running: () => Iterable<{ process: { terminate(reason: "cancel"): void } }>): () => void {
    if (!kill) return () => {};
    const timer = setInterval(() => {
      if (!this.reached()) return;
      this.killed = true;
      for (const shard of running()) shard.process.terminate("cancel");
    }, BUDGET_CHECK_MS);
    return () => clearInterval(timer);
  }

  /** Why a shard was ended at the budget (`--budget-kill`), as its cancel reason; null until then. */
  killReason(): string | null {
    return this.killed ? this.stopReason() : null;
  }

  /** "budget of $20.00 reached ($20.41 spent)": the reason of shards left unstarted; null while not reached. */
  stopReason(): string | null {
    return this.reachedAt === null
      ? null
      : `budget of ${usdText(this.limitUsd)} reached (${usdText(this.reachedAt)} spent)`;
  }
}

/** `summary.cost` of `shards` with the budget on it: present whenever a budget is set, spent or not. */
export function runCost(shards: readonly ShardResult[], budget: RunBudget | null): RunCost | undefined {
  const cost = summarizeCost(shards);
  if (budget === null) return cost;
  const reason = budget.stopReason();
  return {
    ...(cost ?? { usd: 0, usdInUnfinished: 0 }),
    budgetUsd: budget.limitUsd,
    ...(reason ? { budgetReached: reason } : {}),
  };
}

/** Why a shard not running has no result: the budget's stop once reached, else queued, or never started at the end. */
export function unstartedReason(budget: RunBudget | null, final: boolean): string {
  return budget?.stopReason() ?? (final ? "never started" : "queued: not started when this report was written");
}
