/** `shardguard run|list --last-failed`: a rerun of the files the newest run under OUT/runs did not pass. */
import { existsSync, readdirSync } from "node:fs";
import { readRegularTextSync } from "../util/regular-file.ts";
import path from "node:path";
import { ConfigError, type RunSettings } from "../config/settings-schema.ts";
import { resourcePlan } from "../plan/resources.ts";
import { groupIntoShards, type Plan } from "../plan/plan.ts";
import { readTimings } from "../plan/timings.ts";
import { RunReportSchema, type RerunOf, type RunReport } from "../results/report-model.ts";
import { filesToRerun } from "../results/rerun.ts";
import { isolates } from "../exec/bun-command.ts";

/** A run directory's name: the run id (engine/run.ts newRunId), `20261130T160515Z-9e4169`, a bg run's with its label. */
const RUN_ID = /^\d{8}T\d{6}Z-[0-9a-f]+(-[A-Za-z0-9._-]+)?$/;

/**
 * The newest run's report under `out/runs/<run id>/report.json`, with its path; null when none. Ids sort to the
 * second only, so within it `startedAt` decides.
 *
 * @throws ConfigError naming the run when a run of that newest second left no report that parses: an older
 *   run's report would rerun less than the newest left
 */
export function lastReport(out: string): { report: RunReport; file: string } | null {
  let names: string[];
  try {
    names = readdirSync(path.join(out, "runs"))
      .filter((name) => RUN_ID.test(name))
      .sort()
      .reverse();
  } catch {
    return null;
  }
  let newest: { report: RunReport; file: string } | null = null;
  const second = names[0]?.split("-")[0];
  for (const name of names) {
    if (name.split("-")[0] !== second) break;
    const file = path.join(out, "runs", name, "report.json");
    let parsed: ReturnType<typeof RunReportSchema.safeParse> | null = null;
    try {
      parsed = RunReportSchema.safeParse(JSON.parse(readRegularTextSync(file)));
    } catch {
      // Missing, not a regular file, cut short: no report.
    }
    if (!parsed?.success) {
      throw new ConfigError(
        `--last-failed: run ${name} left no report (${file} is missing or unreadable: its reports could not be ` +
          `written, or it is still starting); ` +
          "rerun the whole plan without --last-failed",
      );
    }
    if (!newest || Date.parse(parsed.data.startedAt) > Date.parse(newest.report.startedAt))
      newest = { report: parsed.data, file };
  }
  return newest;
}

/**
 * `--last-failed` takes no PATTERN.
 * @throws ConfigError naming the first pattern
 */
export function refusePatterns(patterns: readonly string[]): void {
  if (patterns.length > 0) {
    throw new ConfigError(
      `--last-failed takes no PATTERN (it reruns the files of the last report); got ${JSON.stringify(patterns[0])}`,
    );
  }
}

/** The files `--last-failed` reruns, or why there is nothing to rerun. */
export type LastFailedFiles =
  | { kind: "files"; files: string[]; rerunOf: RerunOf; from: string; gone: string[] }
  | { kind: "nothing"; message: string };

/**
 * The files of the newest report that did not pass (results/rerun.ts), in its order; files gone since, or that
 * `keep` refuses (it says why), go to `gone`.
 *
 * @throws ConfigError when there is no earlier report, the newest run left none ({@link lastReport}), PATTERNs
 *   were given, or files did not pass there and none can run now
 */
export function lastFailedFiles(
  settings: RunSettings,
  patterns: readonly string[],
  keep: (file: string) => string | null = () => null,
): LastFailedFiles {
  refusePatterns(patterns);
  const last = lastReport(settings.out);
  if (!last)
    throw new ConfigError(
      `--last-failed: no earlier report under ${path.join(settings.out, "runs")} (run once without it first)`,
    );
  const wanted = filesToRerun(last.report);
  const why = (f: string) => (existsSync(path.resolve(settings.root, f)) ? keep(f) : "no longer exists");
  const reasons = new Map(wanted.map((f) => [f, why(f)] as const));
  const present = wanted.filter((f) => reasons.get(f) === null);
  const gone = wanted.filter((f) => reasons.get(f) !== null).map((f) => `${f} ${reasons.get(f)}`);
  if (wanted.length === 0) {
    return {
      kind: "nothing",
      message: `--last-failed: nothing to rerun: every planned file passed in run ${last.report.runId} (${last.file})`,
    };
  }
  if (present.length === 0) {
    // Exit 2, never 0: these files did not pass and nothing has shown otherwise since.
    throw new ConfigError(
      `--last-failed: nothing left to run: none of the ${wanted.length} files that did not pass in run ` +
        `${last.report.runId} can run now (${gone.join("; ")})`,
    );
  }
  return {
    kind: "files",
    files: present,
    rerunOf: { runId: last.report.runId, startedAt: last.report.startedAt, files: present },
    from: last.file,
    gone,
  };
}

/** What `--last-failed` found: the rerun's plan, or why there is nothing to run. */
export type LastFailed =
  | { kind: "plan"; plan: Plan; rerunOf: RerunOf; from: string; gone: string[] }
  | { kind: "nothing"; message: string };

/**
 * Plans the rerun of {@link lastFailedFiles}, grouped by this run's --files-per-shard.
 * @throws ConfigError when there is no earlier report under OUT/runs, or PATTERNs were given
 */
export function planLastFailed(settings: RunSettings, patterns: readonly string[]): LastFailed {
  const found = lastFailedFiles(settings, patterns);
  if (found.kind === "nothing") return found;
  const reason = `did not pass in run ${found.rerunOf.runId}`;
  return {
    kind: "plan",
    plan: {
      root: settings.root,
      patterns: [],
      shards: groupIntoShards(found.files, settings.filesPerShard, {
        batching: {
          durations: readTimings(settings.timings).durations,
          jobs: settings.jobs,
          isolated: isolates(settings.bunArgs),
          timeoutMs: settings.timeoutMs,
        },
        alone: resourcePlan(settings).isExclusive,
      }),
      included: new Map(found.files.map((f) => [f, reason])),
      excluded: [],
    },
    rerunOf: found.rerunOf,
    from: found.from,
    gone: found.gone,
  };
}
