/**
 * `import { recordCost } from "shardguard/cost"`: a test (or a helper it calls) says what it spent as one JSON
 * line in its shard's cost file (docs/cost.md). Imports nothing of the runner, so it loads alone in any Bun.
 */
import { appendFileSync } from "node:fs";

/** The variable naming the cost file in every shard child (and its descendants). */
export const COST_FILE_ENV = "SHARDGUARD_COST_FILE";

/** One line of a cost file (docs/cost.md, "Format"). */
export interface CostRecord {
  /** Dollars spent, finite and ≥ 0; the only required field. */
  usd: number;
  /** Full test name, describe path joined by " > " as in Bun's JUnit; absent: the test in flight. */
  test?: string;
  inputTokens?: number;
  outputTokens?: number;
  /** The model that spent it, as its provider names it. */
  model?: string;
}

/**
 * Appends `cost` as one line to the file `SHARDGUARD_COST_FILE` names; one `O_APPEND` write, so lines of
 * concurrent writers do not interleave. Returns false and writes nothing outside a shardguard shard (the
 * variable unset), so a test calling it also runs under plain `bun test`.
 * @throws TypeError when `usd` is not a finite number ≥ 0; the write's own error when the file is not writable
 */
export function recordCost(cost: CostRecord, env: Record<string, string | undefined> = process.env): boolean {
  if (typeof cost.usd !== "number" || !Number.isFinite(cost.usd) || cost.usd < 0)
    throw new TypeError(`recordCost: usd must be a finite number >= 0, got ${String(cost.usd)}`);
  const file = env[COST_FILE_ENV];
  if (!file) return false;
  const { usd, test, inputTokens, outputTokens, model } = cost;
  appendFileSync(file, `${JSON.stringify({ usd, test, inputTokens, outputTokens, model })}\n`);
  return true;
}
