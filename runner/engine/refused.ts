/**
 * A run refused after its settings were valid (exit 2: no test file matched,
 * a failed preflight, a preset's preflight command that failed, …) must not
 * leave an earlier run's reports at the stable paths, where CI would upload
 * and publish them as this run's. So the stable reports (`--junit`,
 * `--json`, `--ctrf`, `--html`) are removed; the earlier run's own copies under
 * `OUT/runs/<run id>/` and the `OUT/logs` link (the newest run that ran)
 * stay. docs/reports.md.
 *
 * Only files that hold a shardguard report are removed: a report path can
 * be refused precisely because it names something else (a test file, a
 * directory), and that must never be deleted.
 */
import { lstatSync, rmSync } from "node:fs";
import { readRegularFileSync } from "../util/regular-file.ts";
import { parseArgs, RUN_FLAGS } from "../config/args.ts";
import { resolveSettings } from "../config/load.ts";
import type { RunSettings } from "../config/settings-schema.ts";
import { makeRedactor } from "../results/redact.ts";
import { HTML_REPORT_MARK } from "../report/html-mark.ts";
import { EXIT } from "../results/codes.ts";
import { publishRefusal } from "./github-publish.ts";
import type { Host } from "./host.ts";

/**
 * Bytes of a report read to recognize it: every run checks its stable paths
 * before its first spawn, and a report of 100,000 tests is ~30 MB.
 */
const HEAD_BYTES = 64 * 1024;

/** The head of a JSON report or CTRF document as our renderers write it (report/json.ts, report/ctrf.ts). */
const OUR_JSON_HEAD =
  /^\{\s*"schemaVersion":\s*\d+,\s*"runId":\s*"[^"]*",[\s\S]*?\n {2}"tool":\s*\{\s*"name":\s*"shardguard",/;
const OUR_CTRF_HEAD = /^\{\s*"reportFormat":\s*"CTRF",[^{]*"generatedBy":\s*"shardguard",/;

/**
 * True when `file` is a regular file holding a report shardguard wrote
 * (`kind` says which). A file of at most 64 KiB is parsed whole; a larger
 * one is judged by its head as our renderers lay it out.
 */
export function holdsOurReport(file: string, kind: "junit" | "json" | "ctrf" | "html"): boolean {
  try {
    if (!lstatSync(file).isFile()) return false;
    const bytes = readRegularFileSync(file, HEAD_BYTES + 1);
    const text = bytes.toString("utf8");
    if (kind === "html") return text.slice(0, 512).includes(HTML_REPORT_MARK);
    if (kind === "junit") return /^<\?xml[^>]*\?>\s*<testsuites name="shardguard[" ]/.test(text.slice(0, 512));
    if (bytes.length > HEAD_BYTES) return (kind === "json" ? OUR_JSON_HEAD : OUR_CTRF_HEAD).test(text);
    const doc = JSON.parse(text) as Record<string, unknown>;
    if (kind === "json")
      return (doc.tool as { name?: unknown } | undefined)?.name === "shardguard" && typeof doc.runId === "string";
    return doc.reportFormat === "CTRF" && doc.generatedBy === "shardguard";
  } catch {
    return false;
  }
}

/**
 * Removes the stable reports of an earlier run.
 *
 * @returns the paths removed
 */
export function removeStaleReports(
  settings: Pick<RunSettings, "out" | "junit" | "json" | "ctrf"> & { html?: string },
): string[] {
  const removed: string[] = [];
  const reports = [
    ["junit", settings.junit],
    ["json", settings.json],
    ["ctrf", settings.ctrf],
    ...(settings.html ? [["html", settings.html] as const] : []),
  ] as const;
  for (const [kind, file] of reports) {
    if (!holdsOurReport(file, kind)) continue;
    try {
      rmSync(file);
      removed.push(file);
    } catch {
      // Gone already, or not ours to remove: nothing more to do.
    }
  }
  return removed;
}

/**
 * A run whose final report write failed: what the stable paths hold is an
 * older snapshot, this run's interim one (an earlier run's were removed
 * before the first spawn), and it must not stand for the final report, as
 * after a refused run; the run's own directory keeps whatever it got. A run
 * whose shards all passed exits 1: a CI step that reads the files must not
 * be told it passed (docs/reports.md, "A run that cannot write its reports").
 *
 * @returns the report with the exit code the run ends with
 */
export function afterFailedFinalWrite<R extends { exitCode: number | null }>(
  report: R,
  settings: Parameters<typeof removeStaleReports>[0],
  out: { line(text: string): void },
): R {
  const removed = removeStaleReports(settings);
  if (removed.length > 0) {
    out.line(`shardguard: removed the older reports at ${removed.join(", ")}: they are not this run's final reports`);
  }
  if (report.exitCode !== EXIT.ok) return report;
  out.line("shardguard: every shard passed, but the final reports could not be written: exit 1");
  return { ...report, exitCode: EXIT.failed };
}

/**
 * What happens after `shardguard run` (or the preset preload) refused a run
 * with exit 2: when the run's settings are valid (resolved again from the
 * same command line, environment and bunfig.toml), the stable reports of
 * an earlier run are removed and, under GitHub Actions, the reason becomes
 * an `::error` annotation and a step summary. A usage error found before
 * any setting was valid leaves every file alone. Never throws.
 *
 * @param argv the command line after `run` ([] for the preset preload)
 * @param message the refusal, as printed
 */
export function settleRefusal(
  argv: readonly string[],
  host: Pick<Host, "env" | "cwd" | "stdout">,
  message: string,
): void {
  let settings: RunSettings;
  try {
    settings = resolveSettings({
      args: parseArgs(argv, "run", RUN_FLAGS),
      env: host.env,
      cwd: host.cwd,
      defaultBun: process.execPath,
    });
  } catch {
    return;
  }
  removeStaleReports(settings);
  let redact = (text: string) => text;
  try {
    redact = makeRedactor(host.env, { extraNames: settings.redact });
  } catch {
    // An invalid --redact is itself the refusal; the default names still apply.
    redact = makeRedactor(host.env);
  }
  publishRefusal(redact(message), settings, host.env, host.stdout);
}
