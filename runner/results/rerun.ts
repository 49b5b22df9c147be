/** `--last-failed`: which files of an earlier run to run again. Pure. */
import type { RunReport, TestStatus } from "./report-model.ts";

/** Statuses that make a file worth rerunning: neither a pass nor a planned skip. */
export const RERUN_STATUSES: ReadonlySet<TestStatus> = new Set(["failed", "timed-out", "crashed", "never-started"]);

/** Planned files of `report` with an own test that did not pass (an entry-less file takes its shard's status). */
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
