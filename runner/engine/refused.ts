/**
 * A run refused after its settings were valid must not leave an earlier run's reports at the stable paths, where
 * CI would publish them as its own (docs/reports.md, "A refused run"). Only files holding our report go: a report
 * path can be refused precisely because it names something else.
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

/** Bytes of a report read to recognize it: every run checks its stable paths before its first spawn. */
const HEAD_BYTES = 64 * 1024;

/** The head of a JSON report or CTRF document as our renderers write it (report/json.ts, report/ctrf.ts). */
const OUR_JSON_HEAD =
  /^\{\s*"schemaVersion":\s*\d+,\s*"runId":\s*"[^"]*",[\s\S]*?\n {2}"tool":\s*\{\s*"name":\s*"shardguard",/;
const OUR_CTRF_HEAD = /^\{\s*"reportFormat":\s*"CTRF",[^{]*"generatedBy":\s*"shardguard",/;

/** True when `file` is a regular file holding our report of `kind`: small ones parsed whole, larger by their head. */
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

/** Removes the stable reports of an earlier run; returns the paths removed. */
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
 * After a failed final write the stable paths hold an older snapshot, so a run whose shards all passed exits 1
 * (docs/reports.md, "A run that cannot write its reports").
 * @returns the report with the exit code it ends with
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
 * After a refused run (exit 2) whose settings are valid: removes the earlier run's stable reports and, under
 * GitHub Actions, annotates the reason. A usage error before valid settings leaves every file alone. Never throws.
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
