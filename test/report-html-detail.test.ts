/**
 * report.html for a new user, in a real Chromium at 800 px (runner/report/html-page.client.js and .css): a test's
 * detail opens in view with its failure text once, a link opens it, Escape closes it; long paths keep their file
 * name; the search covers failure text; never-run tests show "—"; a short shard's bar stays visible under the
 * longest-chain outline; the table shrinks to a filter's rows.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { renderHtml } from "../runner/report/html.ts";
import { launchBrowser, openReport, searchFor, shownCount } from "./helpers/browser.ts";
import { tempDir } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

const NARROW = { width: 800, height: 700 };
const LONG_FILE = "test/integration/billing/providers/stripe/webhooks/checkout-session-completed.test.ts";
const FAILURE = "expect(received).toBe(expected)";
const DETAILS = `${FAILURE}\n\nExpected: "settled"\nReceived: "pending-capture-window"\n\n      at ${LONG_FILE}:12:5`;

/** 30 passing tests in a 60 s shard, then in its slot (the longest chain) a 26 ms shard with a failure in a long
 * path; a never-started test. */
function fixtureReport() {
  const passing = Array.from({ length: 30 }, (_, i) =>
    makeTest({ name: `suite > passes ${i}`, file: "test/a.test.ts" }),
  );
  const failed = makeTest({
    name: "webhooks > settles the payment",
    file: LONG_FILE,
    status: "failed",
    failure: { type: "failure", errorName: "AssertionError", message: FAILURE, details: DETAILS },
  });
  const never = makeTest({ name: "waits its turn", file: "test/n.test.ts", status: "never-started", durationMs: 0 });
  const at = (s: number) => new Date(Date.parse("2025-01-02T03:04:05.000Z") + s * 1000).toISOString();
  const timeline = (slot: number, goneMs: number) => ({ slot, sigtermMs: null, sigkillMs: null, goneMs });
  return makeReport([
    makeShard({ index: 1, tests: passing, durationMs: 60_000, startedAt: at(0), timeline: timeline(1, 60_000) }),
    makeShard({
      index: 2,
      tests: [failed],
      status: "failed",
      exitCode: 1,
      durationMs: 26,
      startedAt: at(60.5),
      timeline: timeline(1, 26),
    }),
    makeShard({ index: 3, tests: [never], status: "never-started", startedAt: null, exitCode: null }),
  ]);
}

let browser: Browser;
let htmlPath: string;

beforeAll(async () => {
  htmlPath = path.join(tempDir("sg-html-detail-"), "report.html");
  writeFileSync(htmlPath, renderHtml(fixtureReport()));
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** Clicks the table row of the test named `name` (the search narrows the table to it first). */
async function openRow(page: Page, name: string): Promise<void> {
  await searchFor(page, name);
  await page.click("#rows .row");
  await page.waitForSelector("#detail:not([hidden])");
}

test("at 800 px a failed test's detail opens in view, its failure once, with a link that opens it; Escape closes", async () => {
  const { page, errors } = await openReport(browser, htmlPath, NARROW);
  await openRow(page, "settles the payment");
  const box = await page.$eval("#detail", (e) => {
    const r = e.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, text: e.textContent ?? "" };
  });
  expect(box.top).toBeGreaterThanOrEqual(0);
  expect(box.left).toBeGreaterThanOrEqual(0);
  expect(box.right).toBeLessThanOrEqual(NARROW.width);
  expect(box.bottom).toBeLessThanOrEqual(NARROW.height);
  expect(box.text).toContain('Received: "pending-capture-window"');
  expect(box.text.split(FAILURE)).toHaveLength(2);
  const link = await page.$eval("#detail a.link", (e) => e.getAttribute("href") ?? "");
  expect(link).toStartWith("#test=");
  expect(await page.evaluate(() => location.hash)).toBe(link);
  await page.keyboard.press("Escape");
  expect(await page.$eval("#detail", (e) => (e as unknown as { hidden: boolean }).hidden)).toBe(true);
  expect(await page.evaluate(() => location.hash)).toBe("");
  await page.close();
  // The link, opened as a new page, shows that test's detail.
  const linked = await browser.newPage();
  await linked.setViewport(NARROW);
  await linked.goto(`file://${htmlPath}${link}`, { waitUntil: "load" });
  await linked.waitForSelector("#detail:not([hidden])", { timeout: 10_000 });
  expect(await linked.$eval("#detail h3", (e) => e.textContent)).toBe("webhooks > settles the payment");
  expect(errors).toEqual([]);
  await linked.close();
});

test("at 800 px a long path is cut from the left: the file name stays in view", async () => {
  const { page } = await openReport(browser, htmlPath, NARROW);
  await searchFor(page, "settles the payment");
  const cell = await page.$eval("#rows .row .file", (e) => {
    const c = e.getBoundingClientRect();
    const p = (e.firstElementChild as Element).getBoundingClientRect();
    return { cellLeft: c.left, cellRight: c.right, pathLeft: p.left, pathRight: p.right };
  });
  // Wider than its cell, its end at the cell's right edge and its start hidden on the left.
  expect(cell.pathLeft).toBeLessThan(cell.cellLeft);
  expect(Math.abs(cell.pathRight - cell.cellRight)).toBeLessThanOrEqual(1);
  await page.close();
});

test("the search covers failure text; never-run tests show —; the table shrinks to a filter's rows", async () => {
  const { page } = await openReport(browser, htmlPath, NARROW);
  const fullHeight = await page.$eval("#rows", (e) => e.clientHeight);
  await searchFor(page, "pending-capture");
  expect((await shownCount(page)).shown).toBe(1);
  const shrunk = await page.$eval("#rows", (e) => e.clientHeight);
  expect(shrunk).toBeLessThanOrEqual(2 * 26);
  expect(shrunk).toBeLessThan(fullHeight);
  await searchFor(page, "waits its turn");
  const cells = await page.$$eval("#rows .row .num", (es) => es.map((e) => e.textContent));
  expect(cells[0]).toBe("—");
  await page.close();
});

test("a 26 ms shard of a 60 s run has a visible bar, not covered by the longest-chain outline", async () => {
  const { page } = await openReport(browser, htmlPath, NARROW);
  const bar = await page.$eval('#timeline .bar[data-shard="1"] rect', (e) => {
    const r = e.getBoundingClientRect();
    return {
      width: r.width,
      chain: e.parentElement?.classList.contains("chain"),
      paint: getComputedStyle(e).paintOrder,
    };
  });
  expect(bar.chain).toBe(true);
  expect(bar.width).toBeGreaterThanOrEqual(2.5);
  // The outline is painted first, under the fill: it never covers the bar.
  expect(bar.paint).toStartWith("stroke");
  await page.close();
});

test("grouped by file: a heading row per file with its tally before its tests; the count stays the tests'", async () => {
  const { page, errors } = await openReport(browser, htmlPath, NARROW);
  await page.click("#group");
  expect(await shownCount(page)).toEqual({ shown: 32, total: 32 });
  const rows = await page.$$eval("#rows .row", (es) =>
    es
      .map((e) => ({ top: Number.parseFloat((e as HTMLElement).style.top), group: e.classList.contains("group") }))
      .sort((a, b) => a.top - b.top),
  );
  expect(rows[0]!.group).toBe(true);
  expect(rows.slice(1, 31).every((r) => !r.group)).toBe(true);
  await searchFor(page, "settles");
  const heading = await page.$eval("#rows .row.group", (e) => e.textContent);
  expect(heading).toBe(`${LONG_FILE}1 test, 1 not passed`);
  expect(errors).toEqual([]);
  await page.close();
});
