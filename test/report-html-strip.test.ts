/**
 * report.html's outcome strips (issue 36), with real runs and a real Chromium: after three runs of a suite with a
 * test that fails every other run, its row shows a cell per run (oldest first, this run last, each titled with its
 * run and status) and its detail the flip rate of `history --flaky`; without a history the page has neither.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { launchBrowser, openReport, searchFor } from "./helpers/browser.ts";
import { removeSuites } from "./helpers/cli.ts";
import { flakySuite, htmlRows, runSuite, threeRuns } from "./helpers/history-suite.ts";
import { startPostgres } from "./helpers/postgres.ts";

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
const pg = startPostgres();
afterAll(async () => {
  if ("url" in pg) pg.stop();
  await browser?.close();
  removeSuites();
});

/** The strip of the one row the search `name` leaves: each cell's class and title. */
async function stripOf(page: Page, name: string): Promise<{ cls: string; title: string }[]> {
  await searchFor(page, name);
  return page.$$eval("#rows .row[data-test] .strip i", (cells) =>
    cells.map((c) => ({ cls: c.className, title: c.getAttribute("title") ?? "" })),
  );
}

/** The detail's history line of the one row the search `name` leaves. */
async function detailOf(page: Page, name: string): Promise<{ cells: number; text: string }> {
  // The open panel may cover the table: closed first, as a person would.
  if (await page.$("#detail:not([hidden])")) await page.keyboard.press("Escape");
  await searchFor(page, name);
  await page.click("#rows .row[data-test] .name");
  await page.waitForFunction(
    (n) => document.querySelector("#detail:not([hidden]) h3")?.textContent?.endsWith(n),
    {},
    name,
  );
  return page.$eval("#detail .history", (e) => ({
    cells: e.querySelectorAll(".strip i").length,
    text: e.textContent ?? "",
  }));
}

describe("report.html's outcome strips", () => {
  test("three runs: the flaky test's strip is passed, failed, passed and its flip rate 100% over 3 runs", async () => {
    const dir = flakySuite(true);
    const ids = await threeRuns(dir);
    const opened = await openReport(browser, path.join(dir, ".shardguard", "report.html"));
    try {
      const strip = await stripOf(opened.page, "flaky");
      expect(strip.map((c) => c.cls)).toEqual(["st-passed", "st-failed", "st-passed"]);
      expect(strip.map((c) => c.title)).toEqual([
        `run ${ids[0]}: passed`,
        `run ${ids[1]}: failed`,
        `run ${ids[2]} (this run): passed`,
      ]);
      expect(await detailOf(opened.page, "flaky")).toEqual({ cells: 3, text: " flip rate 100% over 3 runs" });
      expect((await stripOf(opened.page, "stable failure")).map((c) => c.cls)).toEqual(Array(3).fill("st-failed"));
      expect((await detailOf(opened.page, "stable failure")).text).toBe(" flip rate 0% over 3 runs");
      expect(opened.errors).toEqual([]);
    } finally {
      await opened.page.close();
    }
    // Without a history: no strip, and the page's data has no history.
    expect((await runSuite(dir, ["--no-history"])).code).toBe(1);
    const plain = await openReport(browser, path.join(dir, ".shardguard", "report.html"));
    try {
      expect(await stripOf(plain.page, "flaky")).toEqual([]);
      expect(await plain.page.$eval("#sg-data", (e) => "history" in JSON.parse(e.textContent ?? "{}"))).toBe(false);
    } finally {
      await plain.page.close();
    }
  }, 240_000);
});

/** The page's `history` of the suite's report.html, and its strip of the test named `name`. */
function embeddedStrip(dir: string, name: string): { runs: string[]; strip: unknown } {
  const html = readFileSync(path.join(dir, ".shardguard", "report.html"), "utf8");
  const m = /<script type="application\/json" id="sg-data">([\s\S]*?)<\/script>/.exec(html);
  const history = (JSON.parse(m![1]!) as { history: { runs: string[]; strips: unknown[] } }).history;
  const i = htmlRows(dir).findIndex((row) => row[2] === name);
  return { runs: history.runs, strip: history.strips[i] };
}

describe("report.html's outcome strips from PostgreSQL", () => {
  test.skipIf("skip" in pg)(
    "three runs against a server: the same strips as from SQLite",
    async () => {
      const url = (pg as { url: string }).url;
      const dir = flakySuite(true);
      const ids = await threeRuns(dir, ["--history", url]);
      const { runs, strip } = embeddedStrip(dir, "flaky");
      expect(runs).toEqual(ids);
      // Statuses as positions in TEST_STATUSES: passed, failed, passed.
      const { TEST_STATUSES } = await import("../runner/results/report-model.ts");
      const code = (s: string) => TEST_STATUSES.indexOf(s as never).toString(36);
      expect(strip).toEqual([`${code("passed")}${code("failed")}${code("passed")}`, 1, 3]);
    },
    240_000,
  );
});
