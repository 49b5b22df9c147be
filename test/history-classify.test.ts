/** The flakiness rules of runner/history/classify.ts, each on outcomes made by hand. */
import { describe, expect, test } from "bun:test";
import {
  autoQuarantined,
  failingSince,
  flakiness,
  isOutage,
  onDefaultBranch,
  passedLast,
  type Outcome,
  type HistoryRunFacts,
} from "../runner/history/classify.ts";
import { forgivenByQuarantine } from "../runner/results/run-verdict.ts";

let n = 0;
/** A run on `sha` of `branch` (main by default) where `bad` of 10 tests did not pass. */
function run(sha: string | null, branch: string | null = "main", bad = 1): HistoryRunFacts {
  n++;
  return {
    runId: `r${n}`,
    startedAt: `2026-12-01T00:00:${String(n).padStart(2, "0")}Z`,
    sha,
    branch,
    defaultBranch: "main",
    testsTotal: 10,
    testsBad: bad,
  };
}
const outcome = (r: HistoryRunFacts, status: string, attempts = 1): Outcome => ({
  run: r,
  status,
  attempts,
  durationMs: 1,
  failureKind: null,
  failureLine: null,
  costUsd: null,
  quarantined: false,
});
const series = (statuses: string[], sha = (i: number): string | null => `c${i}`, branch = "main") =>
  statuses.map((s, i) => outcome(run(sha(i), branch), s));

describe("history flakiness rules", () => {
  test("both outcomes on one commit are certain; flip rate is flips per consecutive pair", () => {
    const facts = flakiness(series(["passed", "failed", "passed"], () => "same"));
    expect(facts.verdict).toBe("certain");
    expect(facts.flips).toBe(2);
    expect(facts.flipRate).toBe(1);
    expect(facts.rateByKind.failed).toBeCloseTo(1 / 3);
  });

  test("a pass after a retry is both outcomes in one run: certain", () => {
    expect(flakiness([outcome(run("a"), "passed", 2)]).verdict).toBe("certain");
  });

  test("flips across commits on the default branch are likely; on another branch only, not flaky", () => {
    expect(flakiness(series(["passed", "failed", "passed", "passed"])).verdict).toBe("likely");
    expect(flakiness(series(["passed", "failed", "passed"], (i) => `c${i}`, "feature")).verdict).toBe("branch-only");
  });

  test("a test that always fails is broken, never flaky nor an auto-quarantine candidate", () => {
    const broken = series(["failed", "timed-out", "crashed"], () => "same");
    expect(flakiness(broken).verdict).toBe("broken");
    expect(autoQuarantined(broken, 0)).toBe(false);
  });

  test("runs where over half the tests did not pass are outages, left out of the evidence", () => {
    const outage = run("c9", "main", 8);
    expect(isOutage(outage)).toBe(true);
    const outcomes = [...series(["passed", "passed"]), outcome(outage, "failed"), ...series(["passed"])];
    expect(flakiness(outcomes).verdict).toBe("stable");
    expect(flakiness(outcomes).runs).toBe(3);
  });

  test("rates are kept per kind of failure", () => {
    const facts = flakiness(series(["passed", "timed-out", "passed", "crashed"], () => "same"));
    expect(facts.rateByKind).toEqual({ failed: 0, "timed-out": 0.25, crashed: 0.25 });
  });

  test("a run without git counts as the default branch; main and master do without a known default", () => {
    expect(onDefaultBranch(run(null, null))).toBe(true);
    expect(onDefaultBranch({ ...run("a", "master"), defaultBranch: null })).toBe(true);
    expect(onDefaultBranch(run("a", "feature"))).toBe(false);
  });

  test("failing since the first failure of the trailing streak; ready to leave after K passes", () => {
    const outcomes = series(["passed", "failed", "skipped", "failed"]);
    expect(failingSince(outcomes)?.since).toBe(outcomes[1]!);
    expect(failingSince(outcomes)?.runs).toBe(2);
    expect(failingSince(series(["failed", "passed"]))).toBeNull();
    expect(passedLast(series(["failed", "passed", "passed"]), 2)).toBe(true);
    expect(passedLast(series(["passed", "failed", "passed"]), 2)).toBe(false);
  });

  test("auto quarantine takes flaky tests at or over the rate", () => {
    const flaky = series(["passed", "failed", "passed", "passed", "passed"], () => "same");
    expect(autoQuarantined(flaky, 0.5)).toBe(true);
    expect(autoQuarantined(flaky, 0.6)).toBe(false);
  });

  test("a shard is forgiven only when each test that did not pass is quarantined", () => {
    const t = (status: "passed" | "failed" | "never-started", quarantined?: boolean) =>
      ({ status, quarantined }) as never;
    expect(forgivenByQuarantine({ status: "failed", tests: [t("passed"), t("failed", true)] })).toBe(true);
    expect(forgivenByQuarantine({ status: "failed", tests: [t("failed", true), t("failed")] })).toBe(false);
    expect(forgivenByQuarantine({ status: "crashed", tests: [t("failed", true), t("never-started")] })).toBe(false);
    expect(forgivenByQuarantine({ status: "failed", tests: [t("passed")] })).toBe(false);
  });
});
