/**
 * `shardguard run|list --last-failed`: the plan of a rerun of the files that
 * did not pass in the newest run under OUT/runs (after Playwright's
 * `--last-failed`, which keeps its last run's failures in a file of its own;
 * ours are the run's own report).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, type RunSettings } from "../config/schema.ts";
import { groupIntoShards, type Plan } from "../plan/plan.ts";
import { RunReportSchema, type RerunOf, type RunReport } from "../results/model.ts";
import { filesToRerun } from "../results/rerun.ts";

/** The newest report of a run under `out/runs/<run id>/report.json` that parses, with its path; null when there is none. */
export function lastReport(out: string): { report: RunReport; file: string } | null {
  let names: string[];
  try {
    names = readdirSync(path.join(out, "runs")).sort().reverse();
  } catch {
    return null;
  }
  for (const name of names) {
    const file = path.join(out, "runs", name, "report.json");
    try {
      const parsed = RunReportSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
      if (parsed.success) return { report: parsed.data, file };
    } catch {
      // A run refused before its first report, or a report cut by a full disk: look further back.
    }
  }
  return null;
}

/** What `--last-failed` found: the rerun's plan, or why there is nothing to run. */
export type LastFailed =
  | { kind: "plan"; plan: Plan; rerunOf: RerunOf; from: string; gone: string[] }
  | { kind: "nothing"; message: string };

/**
 * Plans the rerun: the files of the newest run's report that failed, timed
 * out, crashed or never started (results/rerun.ts), in that report's order,
 * grouped by this run's --files-per-shard. Files deleted since are left out
 * (listed in `gone`).
 *
 * @throws ConfigError when there is no earlier report under OUT/runs, or PATTERNs were given
 */
export function planLastFailed(settings: RunSettings, patterns: readonly string[]): LastFailed {
  if (patterns.length > 0) {
    throw new ConfigError(`--last-failed takes no PATTERN (it reruns the files of the last report); got ${JSON.stringify(patterns[0])}`);
  }
  const last = lastReport(settings.out);
  if (!last) throw new ConfigError(`--last-failed: no earlier report under ${path.join(settings.out, "runs")} (run once without it first)`);
  const wanted = filesToRerun(last.report);
  const present = wanted.filter((f) => existsSync(path.resolve(settings.root, f)));
  const gone = wanted.filter((f) => !present.includes(f));
  if (present.length === 0) {
    const why = wanted.length === 0 ? "every planned file passed" : `the ${wanted.length} files that did not pass no longer exist`;
    return { kind: "nothing", message: `--last-failed: nothing to rerun: ${why} in run ${last.report.runId} (${last.file})` };
  }
  const reason = `did not pass in run ${last.report.runId}`;
  return {
    kind: "plan",
    plan: { root: settings.root, patterns: [], shards: groupIntoShards(present, settings.filesPerShard), included: new Map(present.map((f) => [f, reason])), excluded: [] },
    rerunOf: { runId: last.report.runId, startedAt: last.report.startedAt, files: present },
    from: last.file,
    gone,
  };
}
