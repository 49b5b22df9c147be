/**
 * The run-level verdict: the exit code of a run from its shard results, and
 * the one rule that looks across shards (a `-t` filter that matched nothing
 * anywhere). Per-shard rules are verdict.ts. Exit codes: docs/reports.md.
 */
import { EXIT, SUCCESSFUL_SHARD_STATUSES } from "./codes.ts";
import type { ShardResult, Summary } from "./report-model.ts";

/** What the run knows beyond its shard results. */
export interface RunFacts {
  /** True once every shard has ended (the final report); interim reports have no exit code. */
  final: boolean;
  /** The signal that cancelled the run, or null. */
  cancelledBy: "SIGINT" | "SIGTERM" | null;
  /** True when the bun test flags filter tests by name (`-t` / `--test-name-pattern`). */
  filtersByName: boolean;
}

/** The run's verdict. */
export interface RunVerdict {
  /** 0, 1, 130 or 143 for a final report; null for an interim one. */
  exitCode: number | null;
  /** A name filter that matched no test in any file: nothing executed, so never a pass. */
  filterMatchedNothing: boolean;
}

/**
 * Decides the run's exit code: cancelled → 130 / 143; every shard passed or
 * skipped by diff, and not a name filter that matched nothing → 0; else 1.
 *
 * With `-t`, a file without a matching test is fine, but a run in which the
 * filter matched nothing anywhere executed nothing: never a pass (Bun itself
 * exits 1 with "regex matched 0 tests").
 */
export function decideRun(shards: readonly ShardResult[], summary: Summary, facts: RunFacts): RunVerdict {
  const executed = summary.tests.passed + summary.tests.failed + summary.tests["timed-out"] + summary.tests.crashed;
  const filterMatchedNothing = facts.filtersByName && executed === 0 && shards.some((s) => s.status === "passed");
  const allGood = shards.every((s) => SUCCESSFUL_SHARD_STATUSES.has(s.status)) && !filterMatchedNothing;
  const exitCode = !facts.final
    ? null
    : facts.cancelledBy === "SIGINT"
      ? EXIT.sigint
      : facts.cancelledBy === "SIGTERM"
        ? EXIT.sigterm
        : allGood
          ? EXIT.ok
          : EXIT.failed;
  return { exitCode, filterMatchedNothing };
}
