/**
 * report.html of 100,000 tests in headless Chromium: one real run of the
 * CLI on one file of 100,000 tests (10 failing) writes the page; then each
 * round launches a fresh browser process (Debian's chromium through
 * puppeteer-core, as test/report-html-scale.test.ts) and times, as a
 * person would wait for them: the launch, opening the page from file://
 * until its script is done, the "failed" filter, a search typed in, and
 * opening a test's detail. Prints the medians, the file's size and the
 * time to render it from the report (in this process).
 *
 *   bun bench/html-report.ts [ROUNDS]     (default 5)
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { renderHtml } from "../runner/report/html.ts";
import type { RunReport } from "../runner/results/report-model.ts";
import { launchBrowser, openReport, shownCount } from "../test/helpers/browser.ts";

const REPO = path.resolve(import.meta.dir, "..");
const rounds = Number(process.argv[2] ?? 5);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`usage: bun bench/html-report.ts [ROUNDS], got ${process.argv[2]}`);

const root = mkdtempSync(path.join(os.tmpdir(), "sg-bench-html-"));
writeFileSync(
  path.join(root, "big.test.ts"),
  `import { describe, expect, test } from "bun:test";\nfor (let d = 0; d < 100; d++) describe("block " + d, () => ` +
    `{ for (let i = 0; i < 1000; i++) { const n = d * 1000 + i; test("case " + n, () => { if (n % 10000 === ` +
    `9999) expect(n).toBe(-1); }); } });\n`,
);
const run = spawnSync(
  process.execPath,
  [path.join(REPO, "runner", "cli-entry.ts"), "run", "--root", root, "--jobs", "1", "--timeout", "300"],
  { stdio: ["ignore", "ignore", "inherit"] },
);
if (run.status !== 1) throw new Error(`the run exited ${run.status}, expected 1 (10 failing tests)`);
const htmlPath = path.join(root, ".shardguard", "report.html");
const report = JSON.parse(readFileSync(path.join(root, ".shardguard", "report.json"), "utf8")) as RunReport;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const renderMs: number[] = [];
for (let i = 0; i < rounds; i++) {
  const t0 = performance.now();
  renderHtml(report);
  renderMs.push(performance.now() - t0);
}

const times = {
  launch: [] as number[],
  open: [] as number[],
  filter: [] as number[],
  search: [] as number[],
  detail: [] as number[],
  total: [] as number[],
};
for (let i = 0; i < rounds; i++) {
  const t0 = performance.now();
  const browser = await launchBrowser();
  const t1 = performance.now();
  const { page, errors } = await openReport(browser, htmlPath);
  const t2 = performance.now();
  await page.click('#filters .filter[data-status="failed"]');
  await page.waitForFunction(() => /showing 10 of/.test(document.getElementById("count")!.textContent ?? ""));
  const t3 = performance.now();
  await page.click('#filters .filter[data-status="all"]');
  await page.type("#search", "case 42424");
  await page.waitForFunction(() => /showing 1 of/.test(document.getElementById("count")!.textContent ?? ""));
  const t4 = performance.now();
  await page.click("#rows .row");
  await page.waitForSelector("#detail:not([hidden])");
  const t5 = performance.now();
  if (errors.length > 0 || (await shownCount(page)).total !== 100_000)
    throw new Error(`page errors: ${errors.join("; ")}`);
  await browser.close();
  times.launch.push(t1 - t0);
  times.open.push(t2 - t1);
  // The search includes its 120 ms debounce and typing 10 keys.
  times.filter.push(t3 - t2);
  times.search.push(t4 - t3);
  times.detail.push(t5 - t4);
  times.total.push(t5 - t0);
}
const ms = (xs: number[]) =>
  `${median(xs).toFixed(0)} ms [${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}]`;
console.log(
  `report.html of 100,000 tests: ${(statSync(htmlPath).size / 1e6).toFixed(1)} MB; rendered from the report in ` +
    `${ms(renderMs)}`,
);
console.log(`headless chromium, medians of ${rounds} (min-max), load ${os.loadavg()[0]!.toFixed(1)}:`);
for (const [what, xs] of Object.entries(times)) console.log(`  ${what.padEnd(7)} ${ms(xs)}`);
rmSync(root, { recursive: true, force: true });
