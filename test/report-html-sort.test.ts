/**
 * report.html's sortable test table (issue 35, "cost per test (sortable)"), in a real Chromium: a cost column when a
 * test recorded a cost; a header click sorts ascending, a second descending (tests without a cost last either way),
 * with the arrow and aria-sort; the sort holds with a status filter and with the group-by-file switch.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { renderHtml } from "../runner/report/html.ts";
import type { TestResult } from "../runner/results/report-model.ts";
import { clickFilter, launchBrowser, openReport } from "./helpers/browser.ts";
import { tempDir } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

/** A test named `name` in `file`; `usd` its cost, none when undefined. */
function costly(name: string, file: string, usd?: number, fields: Partial<TestResult> = {}): TestResult {
  return makeTest({ name, file, ...(usd === undefined ? {} : { cost: { usd, source: "cost-file" } }), ...fields });
}

/** Two shards, two files; costs out of the run's order, one test without a cost and one failed. */
function fixtureReport() {
  return makeReport([
    makeShard({
      index: 1,
      tests: [
        costly("cheap", "test/a.test.ts", 0.05),
        costly("free of cost", "test/a.test.ts"),
        costly("dear", "test/a.test.ts", 2.5, { durationMs: 900 }),
      ],
    }),
    makeShard({
      index: 2,
      status: "failed",
      exitCode: 1,
      tests: [
        costly("middling", "test/b.test.ts", 1.25, { durationMs: 40 }),
        costly("fails", "test/b.test.ts", 0.000125, { status: "failed", durationMs: 3 }),
      ],
    }),
  ]);
}

let browser: Browser;
let htmlPath: string;

beforeAll(async () => {
  htmlPath = path.join(tempDir("sg-html-sort-"), "report.html");
  writeFileSync(htmlPath, renderHtml(fixtureReport()));
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** The rendered rows, top to bottom: a test row's name and cost, a file heading as `# file`. */
async function rowsInOrder(page: Page): Promise<string[]> {
  return page.$$eval("#rows .row", (rows) =>
    rows
      .map((r) => ({ top: Number.parseFloat((r as unknown as { style: { top: string } }).style.top), r }))
      .sort((a, b) => a.top - b.top)
      .map(({ r }) =>
        r.classList.contains("group")
          ? `# ${r.querySelector(".path")?.textContent}`
          : `${r.querySelector(".name")?.textContent} ${r.querySelector(".cost")?.textContent}`,
      ),
  );
}

/** Clicks the header that sorts by `key`. */
async function sortBy(page: Page, key: string): Promise<void> {
  await page.click(`#table .row.head .sort[data-sort="${key}"]`);
}

/** The aria-sort and arrow of the header of `key`. */
async function headerState(page: Page, key: string): Promise<{ aria: string | null; arrow: string }> {
  return page.$eval(`#table .row.head .sort[data-sort="${key}"]`, (b) => ({
    aria: b.parentElement?.getAttribute("aria-sort") ?? null,
    arrow: b.querySelector(".arrow")?.textContent ?? "",
  }));
}

test("the Cost header sorts ascending, then descending, tests without a cost last; a third click restores", async () => {
  const { page, errors } = await openReport(browser, htmlPath);
  const runOrder = ["cheap $0.05", "free of cost —", "dear $2.50", "middling $1.25", "fails $0.000125"];
  expect(await rowsInOrder(page)).toEqual(runOrder);
  await sortBy(page, "cost");
  expect(await rowsInOrder(page)).toEqual([
    "fails $0.000125",
    "cheap $0.05",
    "middling $1.25",
    "dear $2.50",
    "free of cost —",
  ]);
  expect(await headerState(page, "cost")).toEqual({ aria: "ascending", arrow: " ▲" });
  await sortBy(page, "cost");
  expect(await rowsInOrder(page)).toEqual([
    "dear $2.50",
    "middling $1.25",
    "cheap $0.05",
    "fails $0.000125",
    "free of cost —",
  ]);
  expect(await headerState(page, "cost")).toEqual({ aria: "descending", arrow: " ▼" });
  expect(await headerState(page, "duration")).toEqual({ aria: null, arrow: "" });
  await sortBy(page, "cost");
  expect(await rowsInOrder(page)).toEqual(runOrder);
  expect(await headerState(page, "cost")).toEqual({ aria: null, arrow: "" });
  expect(errors).toEqual([]);
  await page.close();
});

test("duration and status sort; the sort holds under a status filter and within each file when grouped", async () => {
  const { page, errors } = await openReport(browser, htmlPath);
  await sortBy(page, "duration");
  await sortBy(page, "duration");
  expect((await rowsInOrder(page)).map((r) => r.split(" ")[0])).toEqual(["dear", "middling", "cheap", "free", "fails"]);
  await sortBy(page, "status");
  await sortBy(page, "status");
  expect((await rowsInOrder(page))[0]).toBe("fails $0.000125");
  await sortBy(page, "cost");
  await sortBy(page, "cost");
  await clickFilter(page, "passed");
  expect(await rowsInOrder(page)).toEqual(["dear $2.50", "middling $1.25", "cheap $0.05", "free of cost —"]);
  await clickFilter(page, "all");
  await page.click("#group");
  // Files in the order of their first test in the sort, each file's tests sorted.
  expect(await rowsInOrder(page)).toEqual([
    "# test/a.test.ts",
    "dear $2.50",
    "cheap $0.05",
    "free of cost —",
    "# test/b.test.ts",
    "middling $1.25",
    "fails $0.000125",
  ]);
  expect(errors).toEqual([]);
  await page.close();
});

test("a report without any cost has no cost column", async () => {
  const file = path.join(tempDir("sg-html-nocost-"), "report.html");
  writeFileSync(file, renderHtml(makeReport([makeShard({ index: 1, tests: [costly("plain", "test/p.test.ts")] })])));
  const { page } = await openReport(browser, file);
  expect(await page.$$eval("#table .sort", (bs) => bs.map((b) => b.getAttribute("data-sort")))).toEqual([
    "status",
    "duration",
    "retries",
  ]);
  expect(await page.$$eval("#rows .row .cost", (cs) => cs.length)).toBe(0);
  await page.close();
});
