/** The cost parts of the result model (docs/cost.md, "In the reports"). */
import { z } from "zod";

/** What one test spent. */
export const TestCostSchema = z.object({
  /** Dollars, rounded to 1e-9. */
  usd: z.number().nonnegative(),
  inputTokens: z.number().int().nonnegative().optional(),
  outputTokens: z.number().int().nonnegative().optional(),
  /** Tokens of a source that does not split input from output (gstack's `tokens_used`). */
  tokens: z.number().int().nonnegative().optional(),
  /** The model named by every line charged to it; "mixed" when they differ. */
  model: z.string().optional(),
  /** Where it came from: the shard's cost file, or a preset's adapter (gstack's eval results). */
  source: z.enum(["cost-file", "gstack-eval"]),
});
export type TestCost = z.infer<typeof TestCostSchema>;

/** What one shard spent, its tests' and what no test was named for; present when any cost line arrived. */
export const ShardCostSchema = z.object({
  usd: z.number().nonnegative(),
  inputTokens: z.number().int().nonnegative().optional(),
  outputTokens: z.number().int().nonnegative().optional(),
  tokens: z.number().int().nonnegative().optional(),
  /** Dollars charged to no test entry (no test in flight, events off, a name no entry has). */
  unattributedUsd: z.number().nonnegative(),
  /** Cost lines read, refused ones included. */
  lines: z.number().int().nonnegative(),
  /** Lines refused (not JSON, no usd, …), named in the shard's notes. */
  badLines: z.number().int().nonnegative(),
  /** The preset's adapter that also read the shard's spend (docs/cost.md, "Adapters"). */
  adapter: z.enum(["gstack-eval"]).optional(),
  /** Entries the adapter read (gstack: test entries of the eval result files). */
  evalEntries: z.number().int().nonnegative().optional(),
});
export type ShardCost = z.infer<typeof ShardCostSchema>;

/** What the run spent (`summary.cost`); present when any shard recorded a cost. */
export const RunCostSchema = z.object({
  usd: z.number().nonnegative(),
  /** Dollars of the shards that did not finish: timed out, crashed or cancelled. */
  usdInUnfinished: z.number().nonnegative(),
  /** `--budget-usd`; absent without a budget. */
  budgetUsd: z.number().positive().optional(),
  /** "budget of $20.00 reached ($20.41 spent)" once it stopped shards from starting; absent otherwise. */
  budgetReached: z.string().optional(),
});
export type RunCost = z.infer<typeof RunCostSchema>;
