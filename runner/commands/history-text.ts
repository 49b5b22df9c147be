/** The text form of `shardguard history`'s answers (the JSON form is the answer itself). */
import type { FailingAnswer, FlakyAnswer, TrendAnswer } from "../history/queries.ts";
import { oneLine } from "../util/format.ts";

const pct = (x: number) => `${Math.round(x * 100)}%`;
const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`);

/** Lines of `--flaky`. */
function flakyLines(list: readonly FlakyAnswer[]): string[] {
  return list.map(
    (f) =>
      `  ${pct(f.flipRate).padStart(4)} flips  ${f.verdict.padEnd(7)} ${oneLine(f.test)}  (${f.runs} runs; ` +
      `failed ${pct(f.rateByKind.failed)}, timed out ${pct(f.rateByKind["timed-out"])}, crashed ` +
      `${pct(f.rateByKind.crashed)}; last flip ${f.lastFlip?.runId ?? "-"}, first seen ${f.firstSeen?.runId ?? "-"})`,
  );
}

/** Lines of `--failing`. */
function failingLines(list: readonly FailingAnswer[]): string[] {
  return list.map(
    (f) =>
      `  ${f.status.padEnd(10)} ${oneLine(f.test)}  since ${f.since.runId} (${f.runs} runs)${f.flaky ? " (flaky)" : ""}` +
      (f.failureLine ? `: ${oneLine(f.failureLine)}` : ""),
  );
}

/** Lines of `--slow` / `--cost`. */
function trendLines(answer: { largest: TrendAnswer[]; growing: TrendAnswer[] }, unit: (x: number) => string): string[] {
  const row = (t: TrendAnswer) =>
    `  ${unit(t.latest).padStart(10)}  mean ${unit(t.mean)}${t.growth === null ? "" : `  x${t.growth.toFixed(2)}`}  ${oneLine(t.test)}`;
  return ["largest:", ...answer.largest.map(row), "fastest-growing:", ...answer.growing.map(row)];
}

/** The answer of `question` as lines for a person. */
export function historyText(question: string, answer: Record<string, unknown>): string[] {
  const head = `shardguard history: ${answer.runs} runs`;
  // biome-ignore lint/suspicious/noExplicitAny: each question has its own answer shape
  const a = answer as Record<string, any>;
  switch (question) {
    case "flaky":
      return [`${head}; flaky tests: ${(a.flaky as FlakyAnswer[]).length}`, ...flakyLines(a.flaky)];
    case "failing":
      return [`${head}; failing now: ${(a.failing as FailingAnswer[]).length}`, ...failingLines(a.failing)];
    case "slow":
      return [head, ...trendLines(a as never, ms)];
    case "cost": {
      const t = a as never as { largest: TrendAnswer[]; growing: TrendAnswer[] };
      return t.largest.length === 0
        ? [`${head}; no test has a recorded cost`]
        : [head, ...trendLines(t, (x) => `$${x.toFixed(4)}`)];
    }
    case "test":
      return [
        head,
        ...(a.tests as { test: string; outcomes: { runId: string; status: string; durationMs: number }[] }[]).flatMap(
          (t) => [
            oneLine(t.test),
            ...t.outcomes.map((o) => `  ${o.runId}  ${o.status.padEnd(13)} ${ms(o.durationMs)}`),
          ],
        ),
      ];
    default:
      return [
        head,
        ...(a.list as Record<string, unknown>[]).map(
          (r) =>
            `  ${r.run_id}  exit ${r.exit_code ?? "-"}  ${r.tests_bad}/${r.tests_total} not passed` +
            `${r.git_branch ? `  ${r.git_branch}` : ""}${r.git_sha ? ` ${String(r.git_sha).slice(0, 10)}` : ""}` +
            `${r.slice ? `  slice ${r.slice}` : ""}`,
        ),
      ];
  }
}
