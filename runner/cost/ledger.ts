/** What one shard spent, summed from its cost lines as they arrive (docs/cost.md); pure. */
import { readCostLine } from "./lines.ts";

/** A sum of spend: dollars, tokens where any line gave them, the model when every line named the same one. */
export interface CostSum {
  usd: number;
  inputTokens?: number;
  outputTokens?: number;
  /** Tokens of a source that does not split input from output (gstack's `tokens_used`). */
  tokens?: number;
  model?: string;
}

/** A shard's spend: its total, per test (by full name), what no test was named for, and the lines refused. */
export interface ShardSpend {
  total: CostSum;
  perTest: Map<string, CostSum>;
  /** Dollars on lines with no `test` that arrived while no test was in flight (or without events). */
  unattributedUsd: number;
  lines: number;
  badLines: number;
  /** The first refused lines (1-based line number and why), at most {@link BAD_LINES_NAMED}. */
  badNamed: string[];
}

/** How many refused lines a shard's notes name one by one. */
export const BAD_LINES_NAMED = 3;

/** Dollars rounded to 1e-9, so sums of cents read as cents (0.1 + 0.2 is 0.3). */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

/** `into` plus `add`; a model kept only while every part named the same one ("mixed" otherwise). */
export function addCost(into: CostSum | undefined, add: CostSum): CostSum {
  const sum: CostSum = { usd: roundUsd((into?.usd ?? 0) + add.usd) };
  const tokens = (a?: number, b?: number) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));
  const inputTokens = tokens(into?.inputTokens, add.inputTokens);
  const outputTokens = tokens(into?.outputTokens, add.outputTokens);
  if (inputTokens !== undefined) sum.inputTokens = inputTokens;
  if (outputTokens !== undefined) sum.outputTokens = outputTokens;
  const unsplit = tokens(into?.tokens, add.tokens);
  if (unsplit !== undefined) sum.tokens = unsplit;
  const model = into === undefined ? add.model : into.model === add.model ? add.model : "mixed";
  if (model !== undefined) sum.model = model;
  return sum;
}

/** Sums one shard's lines; each line is charged to its `test`, else to the test in flight when it arrived. */
export class CostLedger {
  private good = 0;
  private readonly spend: ShardSpend = {
    total: { usd: 0 },
    perTest: new Map(),
    unattributedUsd: 0,
    lines: 0,
    badLines: 0,
    badNamed: [],
  };

  /** Takes one line (no newline); `inFlight` is the full name of the test running when it arrived, or null. */
  add(text: string, inFlight: string | null): void {
    if (text.trim() === "") return;
    this.spend.lines++;
    const reading = readCostLine(text);
    if (!reading.ok) {
      this.spend.badLines++;
      if (this.spend.badNamed.length < BAD_LINES_NAMED)
        this.spend.badNamed.push(`line ${this.spend.lines}: ${reading.problem}`);
      return;
    }
    const { test, ...sum } = reading.cost;
    this.spend.total = addCost(this.good++ === 0 ? undefined : this.spend.total, sum);
    const name = test ?? inFlight;
    if (name === null) this.spend.unattributedUsd = roundUsd(this.spend.unattributedUsd + sum.usd);
    else this.spend.perTest.set(name, addCost(this.spend.perTest.get(name), sum));
  }

  /** A bad line too long to keep whole: counted, never parsed. */
  addOverlong(): void {
    this.spend.lines++;
    this.spend.badLines++;
    if (this.spend.badNamed.length < BAD_LINES_NAMED)
      this.spend.badNamed.push(`line ${this.spend.lines}: longer than the line limit`);
  }

  /** The spend so far (a live view: do not change it). */
  get current(): ShardSpend {
    return this.spend;
  }
}
