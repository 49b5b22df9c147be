/** The cost settings (docs/cost.md, "Budget"), rows of settings-schema.ts's table kept beside their value rule. */
import { z } from "zod";

/** Dollars: a plain number above 0 (a flag, variable or TOML value); "", booleans and "1e3" are refused. */
export const USD_KIND = {
  schema: z
    .union([
      z.number(),
      z
        .string()
        .regex(/^\s*[+]?(\d+(\.\d*)?|\.\d+)\s*$/)
        .transform(Number),
    ])
    .pipe(z.number().positive().max(1e9)),
  accepted: "a number of dollars above 0, such as 20 or 2.5",
};

/** `--budget-usd` and its variable and bunfig.toml key. */
export const COST_SETTINGS = [
  {
    key: "budgetUsd",
    flag: "--budget-usd",
    env: "SHARDGUARD_BUDGET_USD",
    toml: "budget-usd",
    kind: "usd",
    help: "dollars the run may spend (docs/cost.md): once the recorded cost reaches it, no further shard starts",
  },
] as const;

/** `--budget-kill`: a flag with no value (`SHARDGUARD_BUDGET_KILL` 1 or true, `budget-kill = true`). */
export const COST_BOOLEAN_FLAGS = {
  "--budget-kill": { env: "SHARDGUARD_BUDGET_KILL", toml: "budget-kill" },
} as const;

/** The cost settings' values in RunSettings. */
export interface CostSettingValues {
  /** Dollars the run may spend (docs/cost.md, "Budget"): once reached no further shard starts; null: none. */
  budgetUsd?: number | null;
  /** At the budget, running shards are ended too (SIGTERM, grace, SIGKILL). */
  budgetKill?: boolean;
}
