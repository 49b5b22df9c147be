/** Reading one line of a cost file (docs/cost.md, "Format"): pure, never throws. */
import type { CostRecord } from "./record.ts";

/** A line read: its record, or why it is not one. */
export type CostLineReading = { ok: true; cost: CostRecord } | { ok: false; problem: string };

const isCount = (value: unknown) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/** Reads one line (without its newline); unknown keys are ignored so later fields do not break older runners. */
export function readCostLine(text: string): CostLineReading {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, problem: "not JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, problem: "not a JSON object" };
  const { usd, test, inputTokens, outputTokens, model } = value as Record<string, unknown>;
  if (typeof usd !== "number" || !Number.isFinite(usd) || usd < 0)
    return { ok: false, problem: "usd is not a number >= 0" };
  if (test !== undefined && (typeof test !== "string" || test === ""))
    return { ok: false, problem: "test is not a non-empty string" };
  if (model !== undefined && typeof model !== "string") return { ok: false, problem: "model is not a string" };
  if (inputTokens !== undefined && !isCount(inputTokens))
    return { ok: false, problem: "inputTokens is not a whole number >= 0" };
  if (outputTokens !== undefined && !isCount(outputTokens))
    return { ok: false, problem: "outputTokens is not a whole number >= 0" };
  const cost: CostRecord = { usd };
  if (test !== undefined) cost.test = test;
  if (inputTokens !== undefined) cost.inputTokens = inputTokens as number;
  if (outputTokens !== undefined) cost.outputTokens = outputTokens as number;
  if (model !== undefined) cost.model = model;
  return { ok: true, cost };
}
