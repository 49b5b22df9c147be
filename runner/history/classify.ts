/**
 * What counts as flaky (docs/history.md, "What counts as flaky"): pure rules over one test's outcomes, oldest
 * first. Both outcomes on one commit is certain; flips across commits on the default branch are likely; a test
 * that always fails is broken; runs where too many tests failed (an outage) are left out before any rule.
 */
import { BAD_STATUSES } from "./rows.ts";

/** One run as the rules see it. */
export interface HistoryRunFacts {
  runId: string;
  startedAt: string;
  sha: string | null;
  branch: string | null;
  defaultBranch: string | null;
  testsTotal: number;
  testsBad: number;
}

/** One test's outcome in one run. */
export interface Outcome {
  run: HistoryRunFacts;
  status: string;
  attempts: number;
  durationMs: number;
  failureKind: string | null;
  failureLine: string | null;
  costUsd: number | null;
  quarantined: boolean;
}

/** The kinds of failure a rate is kept for. */
export const FAIL_KINDS = ["failed", "timed-out", "crashed"] as const;

/** A run where more than this share of its executed tests did not pass is an outage, not evidence. */
export const OUTAGE_SHARE = 0.5;

/** The verdict on one test. */
export type Flakiness = "certain" | "likely" | "broken" | "stable" | "branch-only";

/** What the rules say of one test over a window of runs. */
export interface FlakyFacts {
  verdict: Flakiness;
  /** Decisive outcomes counted (outage runs left out). */
  runs: number;
  flips: number;
  /** Flips per pair of consecutive decisive outcomes; 0 with fewer than two. */
  flipRate: number;
  /** Share of decisive outcomes of each failure kind. */
  rateByKind: Record<(typeof FAIL_KINDS)[number], number>;
  /** The run of the first and of the last flip; null without one. */
  firstFlip: HistoryRunFacts | null;
  lastFlip: HistoryRunFacts | null;
}

/** True when the run's share of bad tests says the infrastructure failed (an outage). */
export function isOutage(run: HistoryRunFacts, share = OUTAGE_SHARE): boolean {
  return run.testsTotal > 0 && run.testsBad / run.testsTotal > share;
}

/** True when the run tested the default branch; a run with no branch known (no git) counts as one. */
export function onDefaultBranch(run: HistoryRunFacts): boolean {
  if (run.branch === null) return true;
  return run.defaultBranch === null
    ? run.branch === "main" || run.branch === "master"
    : run.branch === run.defaultBranch;
}

/** "pass", "fail", or null for an outcome that says nothing (skipped, never started). */
export function passOrFail(status: string): "pass" | "fail" | null {
  return status === "passed" ? "pass" : BAD_STATUSES.has(status) ? "fail" : null;
}

/** The outcomes that count: decisive ones of runs that were not outages. */
export function evidence(outcomes: readonly Outcome[], share = OUTAGE_SHARE): Outcome[] {
  return outcomes.filter((o) => passOrFail(o.status) !== null && !isOutage(o.run, share));
}

/** A commit that saw both outcomes, or one run whose retry passed after a failure. */
export function bothOnOneCommit(outcomes: readonly Outcome[]): boolean {
  if (outcomes.some((o) => o.status === "passed" && o.attempts > 1)) return true;
  const seen = new Map<string, Set<string>>();
  for (const o of outcomes) {
    if (o.run.sha === null) continue;
    const set = seen.get(o.run.sha) ?? new Set<string>();
    set.add(passOrFail(o.status)!);
    if (set.size > 1) return true;
    seen.set(o.run.sha, set);
  }
  return false;
}

/** The indexes `i` where outcome `i` differs from outcome `i - 1`. */
export function flipIndexes(outcomes: readonly Outcome[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < outcomes.length; i++)
    if (passOrFail(outcomes[i]!.status) !== passOrFail(outcomes[i - 1]!.status)) out.push(i);
  return out;
}

/** The verdict from the evidence, in the order of the rules. */
export function verdictOf(kept: readonly Outcome[]): Flakiness {
  if (kept.length > 0 && kept.every((o) => passOrFail(o.status) === "fail")) return "broken";
  if (bothOnOneCommit(kept)) return "certain";
  if (flipIndexes(kept.filter((o) => onDefaultBranch(o.run))).length > 0) return "likely";
  return flipIndexes(kept).length > 0 ? "branch-only" : "stable";
}

/** Everything the rules say of one test's outcomes (oldest first). */
export function flakiness(outcomes: readonly Outcome[], share = OUTAGE_SHARE): FlakyFacts {
  const kept = evidence(outcomes, share);
  const flips = flipIndexes(kept);
  const rate = (kind: string) => (kept.length === 0 ? 0 : kept.filter((o) => o.status === kind).length / kept.length);
  return {
    verdict: verdictOf(kept),
    runs: kept.length,
    flips: flips.length,
    flipRate: kept.length < 2 ? 0 : flips.length / (kept.length - 1),
    rateByKind: { failed: rate("failed"), "timed-out": rate("timed-out"), crashed: rate("crashed") },
    firstFlip: flips.length > 0 ? kept[flips[0]!]!.run : null,
    lastFlip: flips.length > 0 ? kept[flips[flips.length - 1]!]!.run : null,
  };
}

/** True for a verdict that makes a test flaky. */
export function isFlaky(verdict: Flakiness): boolean {
  return verdict === "certain" || verdict === "likely";
}

/** Failing now: the first outcome of the trailing run of failures, and how many; null when the last passed. */
export function failingSince(outcomes: readonly Outcome[]): { since: Outcome; runs: number } | null {
  const decisive = outcomes.filter((o) => passOrFail(o.status) !== null);
  let i = decisive.length;
  while (i > 0 && passOrFail(decisive[i - 1]!.status) === "fail") i--;
  return i === decisive.length ? null : { since: decisive[i]!, runs: decisive.length - i };
}

/** Passed in each of the last `k` decisive outcomes: a quarantined test ready to leave. */
export function passedLast(outcomes: readonly Outcome[], k: number): boolean {
  const decisive = outcomes.filter((o) => passOrFail(o.status) !== null);
  return decisive.length >= k && decisive.slice(-k).every((o) => o.status === "passed");
}

/** The quarantine rule of `quarantine = "auto"`: flaky on the default branch at a flip rate of at least `rate`. */
export function autoQuarantined(outcomes: readonly Outcome[], rate: number): boolean {
  const facts = flakiness(outcomes.filter((o) => onDefaultBranch(o.run)));
  return isFlaky(facts.verdict) && facts.flipRate >= rate;
}
