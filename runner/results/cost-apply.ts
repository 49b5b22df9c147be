/** Puts a shard's recorded spend on its result: each test's part on its entry, the rest on the shard (pure). */
import { addCost, roundUsd, type CostSum, type ShardSpend } from "../cost/ledger.ts";
import { matchEvalEntry, type EvalEntry, type EvalSpend } from "../cost/gstack-eval.ts";
import type { RunCost, TestCost } from "./cost-model.ts";
import type { ShardResult, TestResult } from "./report-model.ts";

/**
 * `result` with `spend` (its cost file) and `evals` (a preset's adapter, docs/cost.md "Adapters") on it: per-test
 * sums on the entries of the same name (the last such entry, so a retried test of Bun 1.3.13's JUnit shows it
 * once), sums for names no entry has added to the shard's unattributed part, and a note for refused input.
 * `result` itself when nothing was recorded.
 */
export function withCost(
  result: ShardResult,
  spend: ShardSpend | null | undefined,
  evals?: EvalSpend | null,
): ShardResult {
  const fromFile = spend && spend.lines > 0 ? spend : null;
  const fromEvals = evals && (evals.entries.length > 0 || evals.problems.length > 0) ? evals : null;
  if (!fromFile && !fromEvals) return result;
  const last = new Map<string, number>();
  result.tests.forEach((test, i) => {
    last.set(test.name, i);
  });
  const costs = new Map<number, TestCost>();
  let unattributedUsd = 0;
  const charge = (name: string | null, sum: CostSum, source: TestCost["source"]) => {
    const i = name === null ? undefined : last.get(name);
    if (i === undefined) unattributedUsd = roundUsd(unattributedUsd + sum.usd);
    else costs.set(i, { ...addCost(costs.get(i), sum), source });
  };
  let total: CostSum = { usd: 0 };
  if (fromFile) {
    unattributedUsd = fromFile.unattributedUsd;
    total = fromFile.total;
    for (const [name, sum] of fromFile.perTest) charge(name, sum, "cost-file");
  }
  if (fromEvals) {
    const names = [...last.keys()];
    fromEvals.entries.forEach(({ entry, inFlight }, i) => {
      const sum = evalSum(entry);
      total = addCost(fromFile || i > 0 ? total : undefined, sum);
      charge(matchEvalEntry(entry, names) ?? inFlight, sum, fromEvals.adapter);
    });
  }
  const tests = costs.size === 0 ? result.tests : result.tests.map((t, i) => withTestCost(t, costs.get(i)));
  const { usd, inputTokens, outputTokens, tokens } = total;
  const cost = {
    usd,
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    unattributedUsd,
    lines: fromFile?.lines ?? 0,
    badLines: fromFile?.badLines ?? 0,
    ...(fromEvals ? { adapter: fromEvals.adapter, evalEntries: fromEvals.entries.length } : {}),
  };
  const added = [
    ...(fromFile && fromFile.badLines > 0 ? [badLinesNote(fromFile)] : []),
    ...(fromEvals && fromEvals.problems.length > 0
      ? [`${fromEvals.adapter} results not read: ${fromEvals.problems.slice(0, 3).join("; ")}`]
      : []),
  ];
  const notes = added.length > 0 ? [...(result.notes ?? []), ...added] : result.notes;
  return { ...result, tests, cost, ...(notes ? { notes } : {}) };
}

/** An eval entry as a cost sum: gstack's `tokens_used` does not split input from output, so it is `tokens`. */
function evalSum(entry: EvalEntry): CostSum {
  return {
    usd: entry.usd,
    ...(entry.tokens !== undefined ? { tokens: entry.tokens } : {}),
    ...(entry.model !== undefined ? { model: entry.model } : {}),
  };
}

function withTestCost(test: TestResult, cost: TestCost | undefined): TestResult {
  return cost ? { ...test, cost } : test;
}

/** "2 cost lines refused (line 3: not JSON; line 5: usd is not a number >= 0)". */
function badLinesNote(spend: ShardSpend): string {
  const more = spend.badLines > spend.badNamed.length ? "; …" : "";
  const noun = spend.badLines === 1 ? "line" : "lines";
  return `${spend.badLines} cost ${noun} refused (${spend.badNamed.join("; ")}${more}), the rest counted`;
}

/** What {@link summarizeCost} reads of a shard. */
interface CostedShard {
  status: ShardResult["status"];
  killedBy: ShardResult["killedBy"];
  cost?: ShardResult["cost"];
}

/** `summary.cost` of `shards` (a merge sums its slices' shards the same way); undefined when none recorded a cost. */
export function summarizeCost(shards: readonly CostedShard[]): RunCost | undefined {
  let usd = 0;
  let usdInUnfinished = 0;
  let any = false;
  for (const shard of shards) {
    if (!shard.cost) continue;
    any = true;
    usd = roundUsd(usd + shard.cost.usd);
    const unfinished = shard.status === "timed-out" || shard.status === "crashed" || shard.killedBy === "cancel";
    if (unfinished) usdInUnfinished = roundUsd(usdInUnfinished + shard.cost.usd);
  }
  return any ? { usd, usdInUnfinished } : undefined;
}

/**
 * Dollars as the console and summaries print them: cents ("$4.12"), more places only when cents would round
 * ("$1.125"), whole dollars bare with `compact` ("$20").
 */
export function usdText(usd: number, compact = false): string {
  if (compact && Number.isInteger(usd)) return `$${usd}`;
  const cents = usd.toFixed(2);
  if (Math.abs(Number(cents) - usd) < 1e-9) return `$${cents}`;
  return `$${usd.toFixed(6).replace(/0+$/, "")}`;
}
