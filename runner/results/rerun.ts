/**
 * `--last-failed`: which files of an earlier run to run again. Pure.
 */
import type { RunReport, TestStatus } from "./report-model.ts";

/** Test statuses that make a file worth rerunning: everything that is neither a pass nor a planned skip. */
export const RERUN_STATUSES: ReadonlySet<TestStatus> = new Set(["failed", "timed-out", "crashed", "never-started"]);

/**
 * The planned files of `report` (relative to its root, in plan order) with
 * at least one test that failed, timed out, crashed or never started. A file
 * without test entries takes its shard's status, as in the JUnit report
 * (a load failure, a killed shard without per-test data). A file whose own
 * tests all passed stays out even when another file of its shard failed.
 */
export function filesToRerun(report: RunReport): string[] {
  const files: string[] = [];
  for (const shard of report.shards) {
    for (const file of shard.files) {
      const tests = shard.tests.filter((t) => t.file === file);
      const statuses: TestStatus[] = tests.length > 0 ? tests.map((t) => t.status) : [shard.status];
      if (statuses.some((s) => RERUN_STATUSES.has(s))) files.push(file);
    }
  }
  return files;
}
