/** Console reporter: plain lines, one per event that matters, so a CI log reads as a timeline. */
import { usdText } from "../results/cost-apply.ts";
import type { PlannedShard } from "../plan/plan.ts";
import type { RunReport, ShardResult } from "../results/report-model.ts";
import path from "node:path";
import { readFileTail } from "../util/file-tail.ts";
import { oneLine, plural, seconds, secs } from "../util/format.ts";
import { consoleLines } from "../util/terminal.ts";

/** Where console lines go; injectable for tests. */
export interface ConsoleOut {
  line(text: string): void;
}

/**
 * A path relative to the current directory when it lies inside it (shorter console lines); reports keep absolute paths.
 */
export function shortPath(file: string, cwd = process.cwd()): string {
  const rel = path.relative(cwd, file);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : file;
}

/** "1 shard", "2 shards"; words ending in s, x, z, ch or sh take "es" ("2 leftover processes"). */
export { plural } from "../util/format.ts";

/**
 * `[2/7] START test/x.test.ts (timeout 1800s) log: …`, with `(waited 41.2 s for resource X)` before the log when the
 * shard waited.
 */
export function startLine(shard: PlannedShard, total: number, timeoutMs: number, logPath: string, waited = ""): string {
  return (
    `[${shard.index}/${total}] START ${filesLabel(shard.files)} (timeout ` +
    `${secs(timeoutMs)})${waited ? ` (${waited})` : ""} log: ${shortPath(logPath)}`
  );
}

/** Most characters a batched shard's file list takes on one console line; its log and the reports list them all. */
const FILES_WIDTH = 100;

/**
 * A shard's files for one console line: the one path, or `15 files: a.test.ts, b.test.ts, … +13`, as many paths
 * (relative to the current directory) as fit in {@link FILES_WIDTH} characters, always the first.
 */
export function filesLabel(files: readonly string[]): string {
  if (files.length <= 1) return oneLine(files[0] ?? "");
  let text = `${files.length} files: ${cutTo(oneLine(shortPath(files[0]!)), FILES_WIDTH / 2).text}`;
  let shown = 1;
  for (const file of files.slice(1)) {
    const next = `${text}, ${oneLine(shortPath(file))}`;
    const more = files.length - shown - 1;
    if ((more > 0 ? `${next}, … +${more}` : next).length > FILES_WIDTH) break;
    text = next;
    shown++;
  }
  return shown < files.length ? `${text}, … +${files.length - shown}` : text;
}

/** Test statuses worth naming on the console: anything that is not a pass or a planned skip. */
const NOTABLE = new Set(["failed", "timed-out", "crashed", "never-started"]);

/** How many non-passing tests a shard's end line names before "and N more". */
const MAX_NAMED = 5;

/** Most characters of a failure message's first line, and of a test name, a console line shows. */
const MESSAGE_WIDTH = 160;
const NAME_WIDTH = 200;

/** `text` cut to `width` code points (never splitting a surrogate pair), "…" marking a cut. */
function cutTo(text: string, width: number): { text: string; cut: boolean } {
  if (text.length <= width) return { text, cut: false };
  // 2 * width + 2 code units hold more than `width` code points whenever the text is longer.
  const points = Array.from(text.slice(0, 2 * width + 2));
  if (points.length <= width) return { text, cut: false };
  return { text: `${points.slice(0, width).join("")}…`, cut: true };
}

/** Most lines of a failure after its first (Bun's Expected/Received) the console shows under a test's line. */
const MAX_FAILURE_LINES = 10;

/** Prefix of a failure's further lines: never blank-led, as a line a CI log reader could obey (`::error::`) is. */
const FAILURE_INDENT = `${" ".repeat(8)}| `;

/**
 * A failure's lines as the console shows them: its message's lines, then the lines of its details (Bun's JUnit
 * failure text: Expected/Received) not already in the message, blank lines dropped, up to the first stack frame.
 */
function failureText(failure: ShardResult["tests"][number]["failure"]): string[] {
  if (!failure) return [];
  // Split at line feeds only: a carriage return is shown (oneLine), never obeyed.
  const message = failure.message.trimEnd().split(/\r?\n/);
  const seen = new Set(message.map((l) => l.trim()));
  const details = (failure.details ?? "").split(/\r?\n/);
  const stack = details.findIndex((l) => /^\s*at\s/.test(l));
  // Bun's JUnit text repeats the message after the error's name ("Error: bad value"): shown once.
  const repeats = (l: string) => seen.has(l.trim()) || (l.trim() !== "" && l.trim().endsWith(`: ${message[0]}`));
  const extra = details.slice(0, stack === -1 ? undefined : stack).filter((l) => !repeats(l));
  return [message[0] ?? "", ...[...message.slice(1), ...extra].filter((l) => l.trim() !== "")];
}

/**
 * A test's console lines: its status, name and failure's first line, then up to {@link MAX_FAILURE_LINES} more of
 * the failure, each cut to its width; a failure shown in part ends with "…" and names `fullTextIn`.
 */
function testLine(test: ShardResult["tests"][number], withFile: boolean, fullTextIn?: string | null): string {
  const where = withFile ? `${test.file} > ` : "";
  const [first = "", ...rest] = failureText(test.failure);
  const shownRest = rest.slice(0, MAX_FAILURE_LINES).map((l) => cutTo(oneLine(l), MESSAGE_WIDTH));
  const shown = [cutTo(oneLine(first), MESSAGE_WIDTH), ...shownRest];
  const cut = shown.some((l) => l.cut) || rest.length > MAX_FAILURE_LINES;
  const last = shown.length - 1;
  const full = cut && fullTextIn ? ` (full text: ${shortPath(fullTextIn)})` : "";
  const texts = shown.map((l, i) => (i === last && cut ? `${l.text}${l.cut ? "" : " …"}${full}` : l.text));
  const flaky = (test.flaky ? " (flaky)" : "") + (test.quarantined ? " (quarantined)" : "");
  // A line break in a name would start a console line of its own, which CI log readers may obey.
  const name = cutTo(oneLine(test.name), NAME_WIDTH).text;
  const head = `    ${test.status.padEnd(13)} ${oneLine(where)}${name}${flaky}${first ? `: ${texts[0]}` : ""}`;
  return [head, ...texts.slice(1).map((t) => `${FAILURE_INDENT}${t}`)].join("\n");
}

/** A shard at least this long (wall time, ms) shows its cost on its end line: Jest's default slow-test threshold. */
export const SLOW_SHARD_MS = 5_000;

/** ` (cpu 12.3 s, peak 412 MiB)` for a slow shard with figures (report.json `resources`); "" otherwise. */
export function costText(result: ShardResult): string {
  const r = result.resources;
  if (r === undefined || result.durationMs < SLOW_SHARD_MS) return "";
  const parts: string[] = [];
  if (r.cpuUserMs !== null && r.cpuSystemMs !== null) parts.push(`cpu ${seconds(r.cpuUserMs + r.cpuSystemMs)}`);
  if (r.peakRssBytes !== null) parts.push(`peak ${Math.round(r.peakRssBytes / 2 ** 20)} MiB`);
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

/** A shard's end line (`[2/7] TIMED-OUT 6.0s test/x.test.ts: killed after …`), followed for a shard that did not
 * pass by its non-passing tests and the path of its full log. */
export function endLine(result: ShardResult, total: number): string {
  const head =
    `[${result.index}/${total}] ${result.status.toUpperCase()} ${secs(result.durationMs)} ` +
    `${filesLabel(result.files)}: ${oneLine(result.reason)}${costText(result)}`;
  const flaky = result.tests.filter((t) => t.flaky).length;
  // "all tests passed" must not hide a test that passed only on a retry; the summary names each.
  if (result.status === "passed" || result.status === "skipped-by-diff")
    return flaky > 0 ? `${head} (${plural(flaky, "flaky test")})` : head;
  const notable = result.tests.filter(
    (t) => NOTABLE.has(t.status) && !(t.status === "never-started" && result.status !== "never-started"),
  );
  // The "full log:" line below names where a cut message is whole.
  const lines = [head, ...notable.slice(0, MAX_NAMED).map((t) => testLine(t, result.files.length > 1))];
  const neverStarted = result.tests.filter((t) => t.status === "never-started").length;
  if (notable.length > MAX_NAMED) lines.push(`    … and ${notable.length - MAX_NAMED} more`);
  if (neverStarted > 0 && result.status !== "never-started")
    lines.push(`    ${plural(neverStarted, "test")} never started`);
  if (result.logPath) lines.push(`    full log: ${shortPath(result.logPath)}`);
  return lines.join("\n");
}

/** The last whole lines of a log, at most `maxLines` and `keepBytes`, without Bun's inspector banner and coverage
 * table, printable (util/terminal.ts); `readBytes` of the log are read so a long coverage table cannot fill the
 * excerpt. "" when it cannot be read: a lost tail must never turn a verdict into an exception. */
export async function logTail(logPath: string, keepBytes = 4096, maxLines = 30, readBytes = 65_536): Promise<string> {
  const tail = await readFileTail(logPath, Math.max(readBytes, keepBytes));
  let text = consoleLines(tail.text);
  if (tail.cut) text = text.slice(text.indexOf("\n") + 1);
  // Bun's banner when a flag starts its inspector (a user's own --inspect): noise beside the test's output.
  text = text.replace(INSPECTOR_BANNER, "");
  const lines = withoutCoverageTable(text.split("\n")).slice(-maxLines);
  while (lines.length > 1 && lines.join("\n").length > keepBytes) lines.shift();
  return lines.join("\n").trimEnd();
}

/** Lines of Bun's text coverage table (`File | % Funcs | % Lines | Uncovered Line #s`, its rows and rules). */
const COVERAGE_LINE = [/^-+(\|-+)+\s*$/, /^File\s+\|\s*% Funcs\s*\|/, /^[^|]*\|\s*\d+\.\d\d\s*\|\s*\d+\.\d\d\s*\|/];

/** `lines` with each run of coverage-table lines replaced by one line saying so: the table hid the failure. */
function withoutCoverageTable(lines: readonly string[]): string[] {
  const out: string[] = [];
  let dropped = 0;
  for (const line of [...lines, ""]) {
    if (COVERAGE_LINE.some((re) => re.test(line))) {
      dropped++;
      continue;
    }
    if (dropped > 0) out.push(`(Bun's coverage table, ${plural(dropped, "line")}, left out: see the full log)`);
    dropped = 0;
    out.push(line);
  }
  out.pop();
  return out;
}

/** Bun's three-line inspector banner, in any order: its listening line goes through another buffer than the dashes. */
const DASHES = "-+ Bun Inspector -+\\n";
const LISTENING = "Listening on unix:[^\\n]*\\n";
const INSPECTOR_BANNER = new RegExp(
  `^(?:${DASHES}${DASHES}${LISTENING}|${DASHES}${LISTENING}${DASHES}|${LISTENING}${DASHES}${DASHES})`,
  "gm",
);

/** How many tests the closing lists name before "and N more". */
const MAX_LISTED = 30;

/** Like Playwright's closing list: every test that needs a look, by name, never-started ones included. */
function notableLines(report: RunReport): string[] {
  const notable = report.shards.flatMap((s) =>
    s.tests.filter((t) => NOTABLE.has(t.status)).map((t) => ({ t, log: s.logPath })),
  );
  if (notable.length === 0) return [];
  const lines = ["shardguard: tests that did not pass:"];
  for (const { t, log } of notable.slice(0, MAX_LISTED)) lines.push(testLine(t, true, log));
  if (notable.length > MAX_LISTED) lines.push(`    … and ${notable.length - MAX_LISTED} more (see the reports)`);
  return lines;
}

/** Every test that passed only on a retry, by name (Playwright's "flaky" list): a pass that needs a look. */
function flakyLines(report: RunReport): string[] {
  const flaky = report.shards.flatMap((s) => s.tests.filter((t) => t.flaky));
  if (flaky.length === 0) return [];
  const lines = [`shardguard: flaky tests (an attempt failed, a retry passed):`];
  for (const t of flaky.slice(0, MAX_LISTED)) {
    const tries = t.retries > 0 ? ` (${plural(t.retries + 1, "attempt")})` : "";
    lines.push(`    ${oneLine(t.file)} > ${cutTo(oneLine(t.name), NAME_WIDTH).text}${tries}`);
  }
  if (flaky.length > MAX_LISTED) lines.push(`    … and ${flaky.length - MAX_LISTED} more (see the reports)`);
  return lines;
}

/** How many files the closing "slowest files" list names. */
const SLOWEST_SHOWN = 5;

/**
 * Wall time (ms) per file of the shards that ran: a one-file shard's duration, a batch's files by the sum of their
 * tests' durations (its start-up is not split).
 */
function fileDurations(report: RunReport): Map<string, number> {
  const out = new Map<string, number>();
  for (const shard of report.shards) {
    if (shard.startedAt === null) continue;
    if (shard.files.length === 1) out.set(shard.files[0]!, shard.durationMs);
    else for (const t of shard.tests) out.set(t.file, (out.get(t.file) ?? 0) + t.durationMs);
  }
  return out;
}

/** The five slowest files of the run, slowest first (the step summary's list); none for a run of one file. */
function slowestLines(report: RunReport): string[] {
  const durations = [...fileDurations(report)].sort((a, b) => b[1] - a[1]);
  if (durations.length < 2) return [];
  return [
    `shardguard: slowest files:`,
    ...durations.slice(0, SLOWEST_SHOWN).map(([f, ms]) => `  ${secs(ms).padStart(7)}  ${oneLine(shortPath(f))}`),
  ];
}

/** The summary's spend line (docs/cost.md): "spent $4.12; $1.03 in shards that did not finish"; none without costs. */
export function costLines(report: RunReport): string[] {
  const cost = report.summary.cost;
  if (!cost) return [];
  const budget = cost.budgetUsd === undefined ? "" : ` (budget ${usdText(cost.budgetUsd, true)})`;
  const unfinished = cost.usdInUnfinished > 0 ? `; ${usdText(cost.usdInUnfinished)} in shards that did not finish` : "";
  const lines = [`shardguard: spent ${usdText(cost.usd)}${budget}${unfinished}`];
  if (cost.budgetReached) lines.push(`shardguard: ${cost.budgetReached}: no further shard was started`);
  const none = cost.budgetUsd !== undefined && report.shards.every((s) => s.cost === undefined);
  if (none) lines.push("shardguard: a budget is set but no shard recorded a cost (docs/cost.md)");
  return lines;
}

/**
 * The closing summary; `paths` null: reports not written (`runCopy`: the run's own report.json, when final);
 * `closing` goes just before the exit line, which is always the last.
 */
export function summaryLines(
  report: RunReport,
  paths: { junit: string; json: string; ctrf: string; html?: string } | null,
  runCopy: string | null = null,
  closing: readonly string[] = [],
): string[] {
  const s = report.summary;
  const shardCounts = (["passed", "failed", "timed-out", "crashed", "never-started", "skipped-by-diff"] as const)
    .filter((k) => s.shards[k] > 0)
    .map((k) => `${s.shards[k]} ${k}`)
    .join(", ");
  const testCounts = (
    ["passed", "failed", "skipped", "todo", "timed-out", "crashed", "never-started", "skipped-by-diff"] as const
  )
    .filter((k) => s.tests[k] > 0)
    .map((k) => `${s.tests[k]} ${k}`)
    .join(", ");
  const lines = [
    "",
    `shardguard: ${plural(s.shards.total, "shard")}: ${shardCounts || "none"}`,
    `shardguard: ${plural(s.tests.total, "test")}: ` +
      `${testCounts || "none"}${s.tests.flaky ? ` (${s.tests.flaky} flaky)` : ""}`,
    ...costLines(report),
  ];
  for (const shard of report.shards) {
    lines.push(`  ${shard.status.padEnd(15)} ${secs(shard.durationMs).padStart(7)}  ${filesLabel(shard.files)}`);
  }
  lines.push(...notableLines(report), ...flakyLines(report), ...slowestLines(report));
  if (paths)
    lines.push(
      `shardguard: JUnit ${paths.junit}`,
      `shardguard: JSON  ${paths.json}`,
      `shardguard: CTRF  ${paths.ctrf}`,
      ...(paths.html ? [`shardguard: HTML  ${paths.html}`] : []),
    );
  else if (runCopy !== null) {
    const at = "no report of this run at the report paths (see the write error above)";
    lines.push(`shardguard: ${at}; its complete JSON report: ${runCopy}`);
  } else lines.push("shardguard: no report was written for this run (see the write error above)");
  lines.push(...closing);
  if (report.cancelledBy) lines.push(`shardguard: cancelled by ${report.cancelledBy}; exit ${report.exitCode}`);
  else lines.push(`shardguard: exit ${report.exitCode}`);
  return lines;
}
