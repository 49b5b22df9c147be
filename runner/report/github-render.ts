/**
 * GitHub Actions reporter: annotations and a Markdown step summary rendered from the report; it decides nothing
 * (cli/execute.ts decides, prints, appends). Text is made printable (util/terminal.ts), then escaped per GitHub's
 * "Workflow commands" format, so no test text can end a command early, add a property or start another command.
 */
import { usdText } from "../results/cost-apply.ts";
import path from "node:path";
import type { RunReport, ShardResult, TestResult, TestStatus } from "../results/report-model.ts";
import { redactReport } from "../results/redact.ts";
import { seconds as secs } from "../util/format.ts";
import { consoleLine, consoleLines } from "../util/terminal.ts";

/** What {@link githubAnnotations} and {@link githubStepSummary} need beyond the report. */
export interface GithubOptions {
  /** Absolute repository root (GITHUB_WORKSPACE, else git's top level, else the run root): annotation and summary
   * paths are relative to it, as GitHub places them. Default: the report's root. */
  repoRoot?: string;
  /** The run's secret redactor, applied to every text taken from a test. Default: none. */
  redact?: (text: string) => string;
  /** The stable report paths, listed in the summary. */
  reports?: { junit: string; json: string; ctrf: string; html: string };
}

/** Test statuses that get an `::error` annotation, most telling first (GitHub shows only the first few per step). */
const NOT_PASSED: readonly TestStatus[] = ["failed", "timed-out", "crashed", "never-started"];

/** Lines and characters of one annotation message: about one screen. */
export const SCREEN_LINES = 20;
export const SCREEN_CHARS = 2000;

/** Annotations written at most; past it one more `::error` says how many were left out. */
export const MAX_ANNOTATIONS = 200;

/** Rows of the summary's table of tests that did not pass. */
export const MAX_SUMMARY_ROWS = 100;

/** Shards listed under "Slowest shards". */
export const SLOWEST_SHARDS = 5;

/** Escapes workflow command data (the message after `::`): `%`, CR, LF. */
export function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

/** Escapes a workflow command property value: as {@link escapeData}, plus `:` and `,`. */
export function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/** One workflow command line, `::error file=a.ts,line=3::message`: properties on one line, message line feeds kept. */
export function workflowCommand(
  command: "error" | "warning" | "notice",
  properties: Record<string, string | number | undefined>,
  message: string,
): string {
  const props = Object.entries(properties)
    .filter(([, v]) => v !== undefined && v !== "")
    .map(([k, v]) => `${k}=${escapeProperty(consoleLine(String(v)))}`)
    .join(",");
  return `::${command}${props ? ` ${props}` : ""}::${escapeData(consoleLines(message))}`;
}

/** `text` cut to one screen, keeping the start (an assertion's message comes first) and saying what was cut. */
export function oneScreen(text: string): string {
  const lines = text.split("\n");
  let kept = lines.slice(0, SCREEN_LINES).join("\n");
  if (kept.length > SCREEN_CHARS) {
    kept = kept.slice(0, SCREEN_CHARS);
    if (/[\uD800-\uDBFF]$/.test(kept)) kept = kept.slice(0, -1);
  }
  return kept.length < text.length ? `${kept}\n… (cut to one screen; the reports and the log have all of it)` : kept;
}

/** `abs` relative to `root` with forward slashes, or null when it lies outside `root`. */
function inside(root: string, abs: string): string | null {
  const rel = path.relative(root, abs);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return null;
  return rel.split(path.sep).join("/");
}

/** A path for people: relative to the repository root when inside it, else as it is. */
function shown(repoRoot: string, abs: string): string {
  return inside(repoRoot, abs) ?? abs;
}

/** The failure text, printable: message, then what Bun's details add (they repeat it): a short one shows once. */
export function failureText(test: TestResult): string {
  const f = test.failure;
  if (!f) return test.status;
  const message = f.message.trimEnd();
  let details = f.details?.trim() ?? "";
  const at = message === "" ? -1 : details.indexOf(message);
  if (at >= 0) details = details.slice(at + message.length).trim();
  return consoleLines(details === "" ? message : `${message}\n\n${details}`).trimEnd();
}

/** The tests that did not pass, with their shard, most telling status first, plan order within a status. */
function notPassed(report: RunReport): { test: TestResult; shard: ShardResult }[] {
  const all = report.shards.flatMap((shard) => shard.tests.map((test) => ({ test, shard })));
  return NOT_PASSED.flatMap((status) => all.filter((e) => e.test.status === status));
}

/** The workflow command lines of a finished run: an `::error` per test that did not pass, a `::warning` per flaky
 * one, each redacted, cut to one screen and naming the log; at most {@link MAX_ANNOTATIONS}. Pure. */
export function githubAnnotations(report: RunReport, options: GithubOptions = {}): string[] {
  const safe = options.redact ? redactReport(report, options.redact) : report;
  const repoRoot = options.repoRoot ?? report.root;
  const lines: string[] = [];
  const location = (test: TestResult) => ({
    file: inside(repoRoot, path.resolve(safe.root, test.file)) ?? undefined,
    line: test.line !== undefined && test.line > 0 ? test.line : undefined,
  });
  const logNote = (shard: ShardResult) => (shard.logPath ? `\n\nlog: ${shown(repoRoot, shard.logPath)}` : "");
  const failing = notPassed(safe);
  for (const { test, shard } of failing.slice(0, MAX_ANNOTATIONS)) {
    const title = `${test.status}: ${test.name}`.slice(0, 200);
    lines.push(
      workflowCommand("error", { ...location(test), title }, `${oneScreen(failureText(test))}${logNote(shard)}`),
    );
  }
  if (failing.length > MAX_ANNOTATIONS) {
    lines.push(
      workflowCommand(
        "error",
        { title: "shardguard" },
        `${failing.length - MAX_ANNOTATIONS} more tests did not pass; the step summary and the reports list them all`,
      ),
    );
  }
  const flaky = safe.shards.flatMap((shard) => shard.tests.filter((t) => t.flaky).map((test) => ({ test, shard })));
  for (const { test, shard } of flaky.slice(0, MAX_ANNOTATIONS)) {
    const attempts = test.attemptFailures.map((a, i) => `attempt ${i + 1}: ${consoleLines(a.message)}`).join("\n");
    const message =
      `passed after ${test.retries} ${test.retries === 1 ? "retry" : "retries"}` + `${attempts ? `\n${attempts}` : ""}`;
    lines.push(
      workflowCommand(
        "warning",
        { ...location(test), title: `flaky: ${test.name}`.slice(0, 200) },
        `${oneScreen(message)}${logNote(shard)}`,
      ),
    );
  }
  return lines;
}

/** Text for one Markdown table cell: printable, on one line, every ASCII punctuation backslash-escaped (CommonMark
 * allows it), so a test name cannot end the cell or open HTML, an entity, a link, code or emphasis. */
export function markdownCell(text: string, max = 300): string {
  let flat = consoleLine(text).replace(/\s+/g, " ").trim();
  if (flat.length > max) flat = `${flat.slice(0, max).replace(/[\uD800-\uDBFF]$/, "")}…`;
  return flat.replace(/[!-/:-@[-`{-~]/g, (c) => `\\${c}`);
}

/** The Markdown step summary of a finished run (docs/ci.md, "GitHub Actions"), paths relative to the repo root. */
export function githubStepSummary(report: RunReport, options: GithubOptions = {}): string {
  const safe = options.redact ? redactReport(report, options.redact) : report;
  const repoRoot = options.repoRoot ?? report.root;
  const out = [
    ...summaryHeading(safe),
    ...costSentence(safe),
    ...statusCountsTable(safe),
    ...notPassedTable(safe, repoRoot),
    ...flakyList(safe),
    ...quarantinedTable(safe),
    ...slowestShardsTable(safe, repoRoot),
    ...failedShardLogs(safe, repoRoot),
    ...reportPaths(repoRoot, options.reports),
  ];
  return `${out.join("\n")}\n`;
}

/** The tests that ran quarantined (docs/history.md, "Quarantine"), each with its real status. */
function quarantinedTable(safe: RunReport): string[] {
  const tests = safe.shards.flatMap((s) => s.tests.filter((t) => t.quarantined));
  if (tests.length === 0) return [];
  const out = [`### Quarantined tests (${tests.length}): their failures do not fail the run`, "", "| test | status |"];
  out.push("| --- | --- |");
  for (const t of tests.slice(0, MAX_SUMMARY_ROWS))
    out.push(`| ${markdownCell(`${t.file} > ${t.name}`)} | ${t.status} |`);
  if (tests.length > MAX_SUMMARY_ROWS) out.push("", `… and ${tests.length - MAX_SUMMARY_ROWS} more.`);
  out.push("");
  return out;
}

/** The summary's heading (verdict and exit code), its preset and tier, and a line of run totals (docs/ci.md). */
function summaryHeading(safe: RunReport): string[] {
  const { shards, tests } = safe.summary;
  const out: string[] = [];
  const verdict = safe.cancelledBy
    ? `cancelled by ${safe.cancelledBy}`
    : safe.exitCode === 0
      ? "passed"
      : "did not pass";
  out.push(`## shardguard: ${verdict} (exit ${safe.exitCode ?? "unknown"})`, "");
  if (safe.preset)
    out.push(
      `Preset ${markdownCell(safe.preset.name)}${safe.preset.tier ? `, tier ${markdownCell(safe.preset.tier)}` : ""}.`,
      "",
    );
  out.push(
    `Run ${markdownCell(safe.runId)}: ${shards.total} shards, ${tests.total} ` +
      `tests${tests.flaky > 0 ? ` (${tests.flaky} flaky)` : ""}, ${secs(safe.durationMs)}.`,
    "",
  );
  return out;
}

/** The run's spend (docs/cost.md), a line and a blank one; none when no cost was recorded. */
function costSentence(safe: RunReport): string[] {
  const cost = safe.summary.cost;
  if (!cost) return [];
  const unfinished =
    cost.usdInUnfinished > 0 ? `, ${usdText(cost.usdInUnfinished)} of it in shards that did not finish` : "";
  return [`Spent ${usdText(cost.usd)}${unfinished}.`, ""];
}

/** The table of shard and test counts by status; a status no shard or test has gets no row. */
function statusCountsTable(safe: RunReport): string[] {
  const { shards, tests } = safe.summary;
  const out = ["| status | shards | tests |", "| --- | ---: | ---: |"];
  for (const status of [
    "passed",
    "failed",
    "timed-out",
    "crashed",
    "never-started",
    "skipped",
    "todo",
    "skipped-by-diff",
  ] as const) {
    const s = status in shards ? shards[status as keyof typeof shards] : 0;
    const t = tests[status];
    if (s > 0 || t > 0) out.push(`| ${status} | ${s} | ${t} |`);
  }
  out.push("");
  return out;
}

/** The table of tests that did not pass, with file, line and reason: at most {@link MAX_SUMMARY_ROWS} rows. */
function notPassedTable(safe: RunReport, repoRoot: string): string[] {
  const failing = notPassed(safe);
  if (failing.length === 0) return [];
  const out = [
    `### Tests that did not pass (${failing.length})`,
    "",
    "| status | test | file | reason |",
    "| --- | --- | --- | --- |",
  ];
  for (const { test } of failing.slice(0, MAX_SUMMARY_ROWS)) {
    const file = shown(repoRoot, path.resolve(safe.root, test.file));
    const where = `${file}${test.line !== undefined ? `:${test.line}` : ""}`;
    out.push(
      `| ${test.status} | ${markdownCell(test.name)} | ${markdownCell(where)} | ` +
        `${markdownCell(test.failure?.message ?? test.status)} |`,
    );
  }
  if (failing.length > MAX_SUMMARY_ROWS)
    out.push("", `… and ${failing.length - MAX_SUMMARY_ROWS} more (see the reports).`);
  out.push("");
  return out;
}

/** The flaky tests (passed after a retry), at most {@link MAX_SUMMARY_ROWS}. */
function flakyList(safe: RunReport): string[] {
  const flaky = safe.shards.flatMap((s) => s.tests.filter((t) => t.flaky));
  if (flaky.length === 0) return [];
  const out = [`### Flaky tests (${flaky.length})`, ""];
  for (const t of flaky.slice(0, MAX_SUMMARY_ROWS))
    out.push(
      `- ${markdownCell(t.name)} (${markdownCell(t.file)}): passed after ${t.retries} ` +
        `${t.retries === 1 ? "retry" : "retries"}`,
    );
  out.push("");
  return out;
}

/** The {@link SLOWEST_SHARDS} slowest shards that started, with their logs. */
function slowestShardsTable(safe: RunReport, repoRoot: string): string[] {
  const slowest = [...safe.shards]
    .filter((s) => s.startedAt !== null)
    .sort((a, b) => b.durationMs - a.durationMs)
    .slice(0, SLOWEST_SHARDS);
  if (slowest.length === 0) return [];
  const out = [
    "### Slowest shards",
    "",
    "| shard | status | time | files | log |",
    "| ---: | --- | ---: | --- | --- |",
  ];
  for (const s of slowest) {
    const log = s.logPath ? markdownCell(shown(repoRoot, s.logPath), 1000) : "none";
    out.push(`| ${s.index} | ${s.status} | ${secs(s.durationMs)} | ${markdownCell(s.files.join(" "))} | ${log} |`);
  }
  out.push("");
  return out;
}

/** The log of every shard that did not pass (nor was skipped by diff), at most {@link MAX_SUMMARY_ROWS}. */
function failedShardLogs(safe: RunReport, repoRoot: string): string[] {
  const logs = safe.shards.filter((s) => s.logPath !== null && s.status !== "passed" && s.status !== "skipped-by-diff");
  if (logs.length === 0) return [];
  const out = ["### Logs of shards that did not pass", ""];
  for (const s of logs.slice(0, MAX_SUMMARY_ROWS))
    out.push(`- shard ${s.index} (${s.status}): ${markdownCell(shown(repoRoot, s.logPath!), 1000)}`);
  out.push("");
  return out;
}

/** The line of report paths, when the caller gave them. */
function reportPaths(repoRoot: string, reports: GithubOptions["reports"]): string[] {
  if (!reports) return [];
  return [
    `Reports: JUnit ${markdownCell(shown(repoRoot, reports.junit), 1000)}, JSON ` +
      `${markdownCell(shown(repoRoot, reports.json), 1000)}, CTRF ` +
      `${markdownCell(shown(repoRoot, reports.ctrf), 1000)}, HTML ${markdownCell(shown(repoRoot, reports.html), 1000)}.`,
    "",
  ];
}

/** Annotation and summary of a refused run (exit 2, no shard ran); `reason` must already be redacted. */
export function githubRefusal(reason: string): { annotation: string; summary: string } {
  return {
    annotation: workflowCommand("error", { title: "shardguard refused the run (exit 2)" }, oneScreen(reason)),
    summary:
      `## shardguard: refused the run (exit 2)\n\nNo shard ran: ${markdownCell(reason, 2000)}\n\nNo report ` +
      `was written, and no earlier run's report was left at the report paths.\n`,
  };
}
