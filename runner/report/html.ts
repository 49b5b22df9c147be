/**
 * report.html: the run as one self-contained page for people, rendered
 * from the result model. A header with the counts, the exit code and the
 * versions; the shard timeline (report/html-timeline.ts, SVG); every test
 * in a table with status filters, text search and a detail view, drawn by
 * the page's own script (report/html-page.ts) from the data embedded as
 * JSON. No network: no external script, style or font, and a
 * Content-Security-Policy that forbids fetching anything, so it works from
 * `file://` and from a CI artifact alike.
 *
 * The document is yielded in pieces (512 test rows at a time) for the
 * streamed atomic writer (report/atomic-stream.ts) and never held whole:
 * 100,000 tests are a few MB of rows.
 */
import type { RunReport, ShardResources, ShardResult, TestStatus } from "../results/report-model.ts";
import { TEST_STATUSES } from "../results/report-model.ts";
import { usdText } from "../results/cost-apply.ts";
import { HTML_REPORT_MARK } from "./html-mark.ts";
import { PAGE_CSS, PAGE_SCRIPT } from "./html-page.ts";
import { escapeHtml, jsonForScript } from "./html-text.ts";
import { layoutTimeline, timelineCaption, timelineSvg } from "./html-timeline.ts";
import { failureNote, reportText } from "./json.ts";

/** The shard's {@link ShardResources}, or null when it never started (or the report predates them). */
export function shardResources(shard: ShardResult): ShardResources | null {
  return shard.resources ?? null;
}

/** What the page shows besides the model. */
export interface HtmlExtras {
  /** The (redacted) tail of a shard's log, by shard index; shown in a test's detail. */
  logTails?: ReadonlyMap<number, string>;
  /** The run history's strips (issue 36); absent without a history, and then the page carries none. */
  history?: HtmlHistory;
}

/** One test's strip: its newest outcomes, oldest first, and `history --flaky`'s flip rate over them. */
export interface TestStrip {
  /** Each outcome's run, as a position in {@link HtmlHistory.runs}. */
  at: number[];
  statuses: string[];
  flipRate: number;
  /** The outcomes the flip rate counted (decisive ones of runs that were not outages). */
  runs: number;
}

/** What the page shows of the run history: the runs' ids (oldest first, this run last) and each test's strip. */
export interface HtmlHistory {
  runs: string[];
  strip(file: string, name: string, status: string, attempts: number): TestStrip;
}

/** Test rows per piece of the document. */
const ROW_BATCH = 512;

/** Test statuses by their code in the page's data (position in TEST_STATUSES). */
const STATUS_CODE = new Map<TestStatus, number>(TEST_STATUSES.map((s, i) => [s, i]));

const round = (ms: number) => Math.round(ms * 10) / 10;

/** report.html as one string: {@link htmlChunks} joined. */
export function renderHtml(report: RunReport, extras: HtmlExtras = {}): string {
  return [...htmlChunks(report, extras)].join("");
}

/**
 * report.html in pieces. The report is read as it is (the writer checks it for report.json beside it); failure texts
 * are cleaned and capped as in report.json; every model string reaches the page escaped ({@link jsonForScript}).
 */
export function* htmlChunks(report: RunReport, extras: HtmlExtras = {}): Generator<string, void, undefined> {
  const title = `shardguard ${report.merged ? "merged report" : "report"} ${report.runId}`;
  yield `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n${HTML_REPORT_MARK}\n`;
  yield `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; ` +
    `style-src 'unsafe-inline'; img-src data:">\n`;
  yield `<meta name="viewport" content="width=device-width, ` +
    `initial-scale=1">\n<title>${escapeHtml(title)}</title>\n<style>${PAGE_CSS}</style>\n</head>\n<body>\n`;
  yield header(report);
  const layout = layoutTimeline(report);
  yield `<section id="timeline-section" aria-labelledby="timeline-h"><h2 id="timeline-h">Timeline</h2>`;
  yield `<p class="legend">${legend()}</p>`;
  yield `<div id="timeline-box">${timelineSvg(report, layout)}<div id="tip" role="tooltip" hidden></div></div>`;
  yield `<p id="timeline-caption">${escapeHtml(timelineCaption(report, layout))}</p>`;
  const unstarted = report.shards.filter((s) => s.startedAt === null);
  if (unstarted.length > 0) {
    const shown = unstarted
      .slice(0, 50)
      .map(
        (s) =>
          `<li><span class="badge st-${s.status}">${escapeHtml(s.status)}</span> ${escapeHtml(s.files.join(", "))}: ` +
          `${escapeHtml(s.reason)}</li>`,
      );
    yield `<details id="unstarted"><summary>${unstarted.length} shard${unstarted.length === 1 ? "" : "s"} without a ` +
      `bar (never started or ` +
      `skipped)</summary><ul>${shown.join("")}${
        unstarted.length > 50 ? `<li>… and ${unstarted.length - 50} more</li>` : ""
      }</ul></details>`;
  }
  yield `</section>\n`;
  yield tableSkeleton(report.shards.some((s) => s.tests.some((t) => t.cost !== undefined)));
  yield `<script type="application/json" id="sg-data">`;
  yield* data(report, extras);
  yield `</script>\n<script>${PAGE_SCRIPT}</script>\n</body>\n</html>\n`;
}

/** The run's spend in the header's facts (docs/cost.md): "spent $4.12 (budget $20), $1.03 in unfinished shards". */
function costFacts(report: RunReport): string[] {
  const cost = report.summary.cost;
  if (!cost) return [];
  const budget = cost.budgetUsd === undefined ? "" : ` (budget ${usdText(cost.budgetUsd, true)})`;
  const unfinished = cost.usdInUnfinished > 0 ? `, ${usdText(cost.usdInUnfinished)} in unfinished shards` : "";
  return [`<span id="spent">spent ${usdText(cost.usd)}${budget}${unfinished}</span>`];
}

function header(report: RunReport): string {
  const t = report.summary.tests;
  const counts: [string, string, number][] = [
    ["planned", "tests planned", t.total],
    ["passed", "passed", t.passed],
    ["failed", "failed", t.failed],
    ["timed-out", "timed out", t["timed-out"]],
    ["crashed", "crashed", t.crashed],
    ["never-started", "never started", t["never-started"]],
    ["flaky", "flaky", t.flaky],
  ];
  if (t.skipped + t.todo > 0) counts.push(["skipped", "skipped or todo", t.skipped + t.todo]);
  if (t["skipped-by-diff"] > 0) counts.push(["skipped-by-diff", "skipped by diff", t["skipped-by-diff"]]);
  const exit = report.exitCode === null ? "running (no exit code yet)" : `exit ${report.exitCode}`;
  const state = report.cancelledBy
    ? `cancelled by ${report.cancelledBy}`
    : report.completed
      ? "completed"
      : report.finishedAt === null
        ? "in progress"
        : "not completed";
  const facts = [
    `<span id="exit-code" class="${report.exitCode === 0 ? "ok" : "bad"}">${escapeHtml(exit)}</span>`,
    escapeHtml(state),
    `${(report.durationMs / 1000).toFixed(1)} s`,
    `${report.summary.shards.total} shard${report.summary.shards.total === 1 ? "" : "s"}, ${report.settings.jobs} ` +
      `job${report.settings.jobs === 1 ? "" : "s"}, timeout ${report.settings.timeoutMs / 1000} s, grace ` +
      `${report.settings.graceMs / 1000} s`,
    `started ${escapeHtml(report.startedAt)}`,
    `<span id="versions">shardguard ${escapeHtml(report.tool.version)} · Bun ${escapeHtml(report.bun.version)}</span>`,
  ];
  if (report.slice) facts.push(`<span id="slice">slice ${report.slice.index} of ${report.slice.count}</span>`);
  if (report.merged) {
    const slices = report.merged.slices.map(
      (s) =>
        `slice ${s.index}: ` +
        `${s.runId === null ? "reported nothing" : `run ${escapeHtml(s.runId)}, exit ${s.exitCode ?? "none"}`}`,
    );
    facts.push(`<span id="merged">merged from ${report.merged.slices.length} slices (${slices.join("; ")})</span>`);
  }
  facts.push(...costFacts(report));
  if (report.preset)
    facts.push(
      `preset ${escapeHtml(report.preset.name)}${report.preset.tier ? `, tier ${escapeHtml(report.preset.tier)}` : ""}`,
    );
  const missing = report.bun.missing?.length
    ? `<ul class="notes">${report.bun.missing.map((m) => `<li>${escapeHtml(m)}</li>`).join("")}</ul>`
    : "";
  const cells = counts
    .map(
      ([key, label, n]) =>
        `<div class="count c-${key}" ` +
        `data-count="${key}"><b>${n.toLocaleString("en-US")}</b><span>${label}</span></div>`,
    )
    .join("");
  return (
    `<header><h1>${escapeHtml(report.merged ? "shardguard · merged run" : "shardguard run")} ` +
    `<code>${escapeHtml(report.runId)}</code></h1><div id="counts">${cells}</div><p ` +
    `id="facts">${facts.join(" · ")}</p>${missing}</header>\n`
  );
}

function legend(): string {
  const statuses = ["passed", "failed", "timed-out", "crashed"].map(
    (s) => `<span class="key st-${s}"><i></i>${s}</span>`,
  );
  return (
    `${statuses.join("")}<span class="key"><i class="k-term"></i>SIGTERM</span><span class="key"><i ` +
    `class="k-grace"></i>grace</span><span class="key"><i class="k-kill"></i>SIGKILL</span><span class="key"><i ` +
    `class="k-idle"></i>idle slot</span><span class="key"><i class="k-chain"></i>longest chain</span>`
  );
}

/** A column header the page sorts by on a click (html-page.client.js): a button with its order's arrow. */
function sortHeader(key: string, cls: string): string {
  return (
    `<span role="columnheader"${cls ? ` class="${cls}"` : ""}><button type="button" class="sort" data-sort="${key}" ` +
    `title="sort by ${key}">${key}<span class="arrow" aria-hidden="true"></span></button></span>`
  );
}

/** The test table's controls and header; `costs`: some test recorded a cost, so the table has a cost column. */
function tableSkeleton(costs: boolean): string {
  const filters = [...TEST_STATUSES, "flaky"]
    .map(
      (s) =>
        `<button type="button" class="filter st-${s}" data-status="${s}" aria-pressed="false">${s} <span ` +
        `class="n"></span></button>`,
    )
    .join("");
  return (
    `<section id="tests-section" aria-labelledby="tests-h"><h2 id="tests-h">Tests</h2>` +
    `<div id="controls"><div id="filters" role="group" aria-label="status filters"><button type="button" ` +
    `class="filter" data-status="all" aria-pressed="true">all <span class="n"></span></button>${filters}</div>` +
    `<input id="search" type="search" placeholder="search file, test or failure" aria-label="search tests">` +
    `<label id="group-label"><input id="group" type="checkbox"> group by file</label><span ` +
    `id="shard-filter" hidden></span><span id="count" aria-live="polite"></span></div>` +
    `<div id="table" role="table" aria-label="tests"${costs ? ` class="with-cost"` : ""}><div class="row head" ` +
    `role="row"><span role="columnheader">file</span><span role="columnheader">describe</span><span ` +
    `role="columnheader">test</span>${sortHeader("status", "")}${sortHeader("duration", "num")}` +
    `${sortHeader("retries", "num")}${costs ? sortHeader("cost", "num") : ""}</div>` +
    `<div id="rows" tabindex="-1"><div id="spacer"></div></div></div>` +
    `<section id="detail" hidden aria-live="polite"></section><noscript>The test table needs ` +
    `JavaScript.</noscript></section>\n`
  );
}

/**
 * The page's data: `{"run", "shards", "tests", "files"}` and, with a history, `"history"`
 * ({@link historyData}). Each test is a row `[shard, file, name, status, durationMs, retries, flaky, failureType,
 * failureMessage, failureDetails, attempts, line, quarantined, usd]` (shard: its position in
 * `shards`; file: its position in `files`; status: its position in
 * TEST_STATUSES; 0 for an absent text or line; usd: dollars spent, null for no
 * cost recorded), so 100,000 tests are a few
 * MB and no key is repeated per test.
 */
function* data(report: RunReport, extras: HtmlExtras): Generator<string, void, undefined> {
  const run = {
    runId: report.runId,
    exitCode: report.exitCode,
    jobs: report.settings.jobs,
    statuses: TEST_STATUSES,
    total: report.summary.tests.total,
  };
  const layoutStart = report.shards.map((s) => (s.startedAt === null ? null : Date.parse(s.startedAt)));
  const origin = Math.min(...layoutStart.filter((t): t is number => t !== null), Infinity);
  const shards = report.shards.map((s, i) => ({
    index: s.index,
    files: s.files,
    status: s.status,
    reason: s.reason,
    exitCode: s.exitCode,
    signal: s.signal,
    killedBy: s.killedBy,
    durationMs: round(s.durationMs),
    startMs: layoutStart[i] === null ? null : round(layoutStart[i]! - origin),
    timeline: s.timeline ?? null,
    resources: shardResources(s),
    locks: s.locks ?? [],
    exclusive: s.exclusive ?? false,
    waited: s.waitedMs !== undefined ? { ms: round(s.waitedMs), for: s.waitedFor ?? [] } : null,
    notes: s.notes ?? [],
    leftovers: s.leftovers.length,
    cost: s.cost ? usdText(s.cost.usd) : null,
    logPath: s.logPath,
    logIncomplete: s.logIncomplete,
    tail: extras.logTails?.get(s.index) ?? null,
  }));
  yield jsonForScript(`{"run":${JSON.stringify(run)},"shards":${JSON.stringify(shards)},"tests":[`);
  const files = new Map<string, number>();
  let rows: string[] = [];
  let first = true;
  for (let s = 0; s < report.shards.length; s++) {
    const shard = report.shards[s]!;
    const note = failureNote(shard.logPath);
    for (const test of shard.tests) {
      let file = files.get(test.file);
      if (file === undefined) files.set(test.file, (file = files.size));
      const f = test.failure;
      const attempts =
        test.attemptFailures.length > 0
          ? test.attemptFailures
              .map((a, n) => `attempt ${n + 1}: ${a.errorName ?? a.type}: ${reportText(a.message, note)}`)
              .join("\n")
          : 0;
      const row = [
        s,
        file,
        test.name,
        STATUS_CODE.get(test.status) ?? 0,
        round(test.durationMs),
        test.retries,
        test.flaky ? 1 : 0,
        f ? (f.errorName ?? f.type) : 0,
        f ? reportText(f.message, note) : 0,
        f?.details !== undefined ? reportText(f.details, note) : 0,
        attempts,
        test.line ?? 0,
        test.quarantined ? 1 : 0,
        test.cost ? test.cost.usd : null,
      ];
      rows.push((first ? "" : ",") + JSON.stringify(row));
      first = false;
      if (rows.length >= ROW_BATCH) {
        yield jsonForScript(rows.join(""));
        rows = [];
      }
    }
  }
  if (rows.length > 0) yield jsonForScript(rows.join(""));
  yield jsonForScript(`],"files":${JSON.stringify([...files.keys()])}`);
  if (extras.history) yield* historyData(report, extras.history);
  yield "}";
}

/**
 * The page's `history`: `{"runs", "strips"}`, a strip per test in the order of `tests`, as `[cells, flipRate, runs]`:
 * cells has a character per run of `runs`, the outcome's status as its position in TEST_STATUSES (base 36) or "."
 * for none, so 100,000 strips of 20 runs are about 3 MB.
 */
function* historyData(report: RunReport, history: HtmlHistory): Generator<string, void, undefined> {
  yield jsonForScript(`,"history":{"runs":${JSON.stringify(history.runs)},"strips":[`);
  let strips: string[] = [];
  let first = true;
  const encoded = new Map<TestStrip, string>();
  // The same order as `tests`: shard by shard, each shard's tests in order.
  for (const shard of report.shards)
    for (const test of shard.tests) {
      const strip = history.strip(test.file, test.name, test.status, test.retries + 1);
      // A history may hand the same strip to many tests (history/strips.ts): encoded once.
      let entry = encoded.get(strip);
      if (entry === undefined) encoded.set(strip, (entry = stripEntry(strip, history.runs.length)));
      strips.push((first ? "" : ",") + entry);
      first = false;
      if (strips.length >= ROW_BATCH) {
        yield jsonForScript(strips.join(""));
        strips = [];
      }
    }
  if (strips.length > 0) yield jsonForScript(strips.join(""));
  yield "]}";
}

/** One strip's entry of {@link historyData}. */
function stripEntry(strip: TestStrip, runs: number): string {
  const cells = Array<string>(runs).fill(".");
  strip.at.forEach((at, i) => {
    const code = STATUS_CODE.get(strip.statuses[i] as TestStatus);
    if (code !== undefined) cells[at] = code.toString(36);
  });
  return JSON.stringify([cells.join(""), Math.round(strip.flipRate * 1000) / 1000, strip.runs]);
}
