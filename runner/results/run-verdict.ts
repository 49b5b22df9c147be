/** The run's exit code from its shard results (docs/reports.md); per-shard rules are verdict.ts. */
import { EXIT, SUCCESSFUL_SHARD_STATUSES } from "./codes.ts";
import type { ShardResult, Summary } from "./report-model.ts";

/** What the run knows beyond its shard results. */
export interface RunFacts {
  /** Every shard has ended (the final report); interim reports have no exit code. */
  final: boolean;
  /** The signal that cancelled the run, or null. */
  cancelledBy: "SIGINT" | "SIGTERM" | null;
  /** The bun test flags filter tests by name (`-t`). */
  filtersByName: boolean;
}

/** The run's verdict. */
export interface RunVerdict {
  /** 0, 1, 130 or 143 for a final report; null for an interim one. */
  exitCode: number | null;
  /** A name filter that matched no test in any file: nothing executed, so never a pass. */
  filterMatchedNothing: boolean;
}

/** Statuses a test ends with that say nothing against the run. */
const HARMLESS_TEST_STATUSES: ReadonlySet<string> = new Set(["passed", "skipped", "todo", "skipped-by-diff"]);

/**
 * A shard that failed only through quarantined tests (docs/history.md, "Quarantine"): each test that did not
 * pass is quarantined, and there is one; a shard with no such test failed for something else.
 */
export function forgivenByQuarantine(shard: Pick<ShardResult, "status" | "tests">): boolean {
  if (shard.status !== "failed" && shard.status !== "timed-out" && shard.status !== "crashed") return false;
  const bad = shard.tests.filter((t) => !HARMLESS_TEST_STATUSES.has(t.status));
  return bad.length > 0 && bad.every((t) => t.quarantined === true);
}

/** The run's exit code (docs/reports.md): a `-t` that matched nothing anywhere is never a pass (Bun exits 1 too). */
export function decideRun(shards: readonly ShardResult[], summary: Summary, facts: RunFacts): RunVerdict {
  const executed = summary.tests.passed + summary.tests.failed + summary.tests["timed-out"] + summary.tests.crashed;
  const filterMatchedNothing = facts.filtersByName && executed === 0 && shards.some((s) => s.status === "passed");
  const allGood =
    shards.every((s) => SUCCESSFUL_SHARD_STATUSES.has(s.status) || forgivenByQuarantine(s)) && !filterMatchedNothing;
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
