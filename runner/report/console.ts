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
    `[${shard.index}/${total}] START ${oneLine(shard.files.join(" "))} (timeout ` +
    `${secs(timeoutMs)})${waited ? ` (${waited})` : ""} log: ${shortPath(logPath)}`
  );
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

/** A test's console line; a message shown in part ends with "…" and names `fullTextIn`: never read as whole. */
function testLine(test: ShardResult["tests"][number], withFile: boolean, fullTextIn?: string | null): string {
  const where = withFile ? `${test.file} > ` : "";
  // Split at line feeds only: a carriage return is shown (oneLine), never obeyed.
  const [first = "", ...rest] = (test.failure?.message ?? "").trimEnd().split(/\r?\n/);
  const shown = cutTo(oneLine(first), MESSAGE_WIDTH);
  const linesLeftOut = rest.some((l) => l.trim() !== "");
  const cut = shown.cut || linesLeftOut;
  const message = `${shown.text}${linesLeftOut && !shown.cut ? " …" : ""}${
    cut && fullTextIn ? ` (full text: ${shortPath(fullTextIn)})` : ""
  }`;
  const flaky = (test.flaky ? " (flaky)" : "") + (test.quarantined ? " (quarantined)" : "");
  // A line break in a name would start a console line of its own, which CI log readers may obey.
  const name = cutTo(oneLine(test.name), NAME_WIDTH).text;
  return `    ${test.status.padEnd(13)} ${oneLine(where)}${name}${flaky}${first ? `: ${message}` : ""}`;
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
    `${oneLine(result.files.join(" "))}: ${oneLine(result.reason)}${costText(result)}`;
  if (result.status === "passed" || result.status === "skipped-by-diff") return head;
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

/** The last `maxBytes` of a log in whole lines, without Bun's inspector banner, printable (util/terminal.ts);
 * "" when it cannot be read: a lost tail must never turn a verdict into an exception. */
export async function logTail(logPath: string, maxBytes = 4096, maxLines = 30): Promise<string> {
  const tail = await readFileTail(logPath, maxBytes);
  let text = consoleLines(tail.text);
  if (tail.cut) text = text.slice(text.indexOf("\n") + 1);
  // Bun's banner when a flag starts its inspector (a user's own --inspect): noise beside the test's output.
  text = text.replace(INSPECTOR_BANNER, "");
  return text.split("\n").slice(-maxLines).join("\n").trimEnd();
}

/** Bun's three-line inspector banner, in any order: its listening line goes through another buffer than the dashes. */
const DASHES = "-+ Bun Inspector -+\\n";
const LISTENING = "Listening on unix:[^\\n]*\\n";
const INSPECTOR_BANNER = new RegExp(
  `^(?:${DASHES}${DASHES}${LISTENING}|${DASHES}${LISTENING}${DASHES}|${LISTENING}${DASHES}${DASHES})`,
  "gm",
);

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

/** The closing summary; `paths` null: reports not written (`runCopy`: the run's own report.json, when final). */
export function summaryLines(
  report: RunReport,
  paths: { junit: string; json: string; ctrf: string; html?: string } | null,
  runCopy: string | null = null,
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
    lines.push(`  ${shard.status.padEnd(15)} ${secs(shard.durationMs).padStart(7)}  ${oneLine(shard.files.join(" "))}`);
  }
  // Like Playwright's closing list: every test that needs a look, by name.
  const notable = report.shards.flatMap((s) =>
    s.tests.filter((t) => NOTABLE.has(t.status) && t.status !== "never-started").map((t) => ({ t, log: s.logPath })),
  );
  if (notable.length > 0) {
    lines.push(`shardguard: tests that did not pass:`);
    for (const { t, log } of notable.slice(0, 30)) lines.push(testLine(t, true, log));
    if (notable.length > 30) lines.push(`    … and ${notable.length - 30} more (see the reports)`);
  }
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
  if (report.cancelledBy) lines.push(`shardguard: cancelled by ${report.cancelledBy}; exit ${report.exitCode}`);
  else lines.push(`shardguard: exit ${report.exitCode}`);
  return lines;
}
