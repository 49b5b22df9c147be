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
import { readRegularTextSync } from "../util/regular-file.ts";
import { parseArgs, RUN_FLAGS } from "../config/args.ts";
import { resolveSettings } from "../config/load.ts";
import type { RunSettings } from "../config/settings-schema.ts";
import { makeRedactor } from "../results/redact.ts";
import { HTML_REPORT_MARK } from "../report/html-mark.ts";
import { publishRefusal } from "./github-publish.ts";
import type { Host } from "./host.ts";

/** True when `file` is a regular file holding a report shardguard wrote (`kind` says which). */
export function holdsOurReport(file: string, kind: "junit" | "json" | "ctrf" | "html"): boolean {
  try {
    if (!lstatSync(file).isFile()) return false;
    const text = readRegularTextSync(file);
    if (kind === "html") return text.slice(0, 512).includes(HTML_REPORT_MARK);
    if (kind === "junit") return /^<\?xml[^>]*\?>\s*<testsuites name="shardguard[" ]/.test(text.slice(0, 512));
    const doc = JSON.parse(text) as Record<string, unknown>;
    if (kind === "json") return (doc.tool as { name?: unknown } | undefined)?.name === "shardguard" && typeof doc.runId === "string";
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
export function removeStaleReports(settings: Pick<RunSettings, "out" | "junit" | "json" | "ctrf"> & { html?: string }): string[] {
  const removed: string[] = [];
  const reports = [["junit", settings.junit], ["json", settings.json], ["ctrf", settings.ctrf], ...(settings.html ? [["html", settings.html] as const] : [])] as const;
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
export function settleRefusal(argv: readonly string[], host: Pick<Host, "env" | "cwd" | "stdout">, message: string): void {
  let settings: RunSettings;
  try {
    settings = resolveSettings({ args: parseArgs(argv, "run", RUN_FLAGS), env: host.env, cwd: host.cwd, defaultBun: process.execPath });
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
