/** `shardguard merge DIR...`: the slices' report.json merged against the plan (results/merge.ts), all re-rendered. */
import { existsSync, statSync } from "node:fs";
import { readRegularTextSync } from "../util/regular-file.ts";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { ConfigError } from "../config/settings-schema.ts";
import { readTimingsFile, renderTimings } from "../plan/timings.ts";
import { summaryLines } from "../report/console.ts";
import { renderCtrf } from "../report/ctrf.ts";
import { renderHtml } from "../report/html.ts";
import { renderJson } from "../report/json.ts";
import { renderJUnit } from "../report/junit.ts";
import { mergeSlices, MergeError, type SliceReport } from "../results/merge.ts";
import { EXIT, REPORT_SCHEMA_VERSION, RunReportSchema } from "../results/report-model.ts";
import { writeFileAtomic } from "../util/atomic.ts";
import { plural } from "../util/format.ts";
import { TOOL_VERSION } from "../util/version.ts";
import type { Host } from "../engine/host.ts";
import { removeStaleReports } from "../engine/refused.ts";
import { newRunId } from "../engine/run-id.ts";
import { measuredDurations } from "../engine/timings-update.ts";

/** What `shardguard merge` was asked to do; paths absolute. */
export interface MergeCommandInputs {
  /** Slice output directories (each holding report.json), or report.json files themselves. */
  sources: string[];
  /** Where junit.xml, report.json, ctrf.json and report.html of the merge go. */
  out: string;
  /** Bun timings file to merge the measured per-file durations into; null for none. */
  updateTimings: string | null;
}

/** Default output directory of a merge, relative to the working directory. */
export const DEFAULT_MERGE_OUT = path.join(".shardguard", "merged");

/**
 * Merges, writes and prints the summary.
 * @returns 0 when every planned file passed and every slice exited 0
 *
 * @throws ConfigError (exit 2; nothing written, an earlier merge's reports removed) for a missing or unreadable
 *   report, differing plan hashes, a slice given twice, a file reported twice, or a malformed timings file
 */
export async function mergeCommand(inputs: MergeCommandInputs, host: Host): Promise<number> {
  const paths = {
    junit: path.join(inputs.out, "junit.xml"),
    json: path.join(inputs.out, "report.json"),
    ctrf: path.join(inputs.out, "ctrf.json"),
    html: path.join(inputs.out, "report.html"),
  };
  try {
    return await merge(inputs, paths, host);
  } catch (error) {
    // As for a refused run (docs/reports.md): an earlier merge's reports must not pass for this one's.
    if (error instanceof ConfigError) removeStaleReports({ out: inputs.out, ...paths });
    throw error;
  }
}

async function merge(
  inputs: MergeCommandInputs,
  paths: { junit: string; json: string; ctrf: string; html: string },
  host: Host,
): Promise<number> {
  const slices: SliceReport[] = [];
  for (const source of inputs.sources) {
    const file = existsSync(source) && statSync(source).isDirectory() ? path.join(source, "report.json") : source;
    if (!existsSync(file)) {
      // A slice whose runner died before its first report: its files count as never-started, not a usage error.
      host.stderr(
        `shardguard: warning: ${source} holds no report.json; skipped (its slice counts as reporting nothing)`,
      );
      continue;
    }
    slices.push({ source, report: readReport(file) });
  }
  if (slices.length === 0)
    throw new ConfigError(
      `no slice report found in ${inputs.sources.join(", ")} (each DIR is the OUT of a shardguard run --shard I/N)`,
    );
  const previousTimings = inputs.updateTimings ? readTimingsFile(inputs.updateTimings, "--update-timings") : null;

  let report: ReturnType<typeof mergeSlices>;
  try {
    report = mergeSlices(slices, { runId: newRunId(), toolVersion: TOOL_VERSION, now: new Date() });
  } catch (error) {
    if (error instanceof MergeError) throw new ConfigError(error.message);
    throw error;
  }

  for (const s of report.merged!.slices) {
    const count = report.plan!.shards.filter((x) => x.slice === s.index).reduce((n, x) => n + x.files.length, 0);
    host.stdout(
      s.runId === null
        ? `shardguard: slice ${s.index}/${report.plan!.slices}: reported nothing; its ${plural(count, "file")} ` +
            `${count === 1 ? "is" : "are"} never-started`
        : `shardguard: slice ${s.index}/${report.plan!.slices}: run ${s.runId}, exit ` +
            `${s.exitCode ?? "none (unfinished)"}, ${plural(count, "file")} (${s.source})`,
    );
  }
  await mkdir(inputs.out, { recursive: true });
  await writeFileAtomic(paths.junit, renderJUnit(report));
  await writeFileAtomic(paths.json, renderJson(report));
  await writeFileAtomic(paths.ctrf, renderCtrf(report));
  // The slices' logs are on their own machines: the page names them, without their tails.
  await writeFileAtomic(paths.html, renderHtml(report));
  if (inputs.updateTimings) {
    const measured = measuredDurations(report.shards, previousTimings?.files);
    await writeFileAtomic(inputs.updateTimings, renderTimings(previousTimings, measured));
    host.stdout(`shardguard: timings of ${plural(measured.size, "file")} merged into ${inputs.updateTimings}`);
  }
  for (const line of summaryLines(report, paths)) host.stdout(line);
  return report.exitCode ?? EXIT.failed;
}

function readReport(file: string) {
  let json: unknown;
  try {
    json = JSON.parse(readRegularTextSync(file));
  } catch (error) {
    throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const parsed = RunReportSchema.safeParse(json);
  if (!parsed.success)
    throw new ConfigError(`${file} is not a shardguard report.json of schema version ${REPORT_SCHEMA_VERSION}`);
  return parsed.data;
}
