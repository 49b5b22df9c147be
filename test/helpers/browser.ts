/**
 * A real headless Chromium for the report.html tests (test/report-html*.test.ts),
 * driven by puppeteer-core with the system browser (.ci/run installs Debian's
 * `chromium`); nothing downloads a browser. SHARDGUARD_CHROMIUM names another
 * executable.
 */
import { existsSync } from "node:fs";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

/** The browser executable the tests launch. */
export const CHROMIUM =
  process.env.SHARDGUARD_CHROMIUM ??
  ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p)) ??
  "/usr/bin/chromium";

/** Launches headless Chromium; throws a clear error when it is not installed. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's chromium package (.ci/run does) or set SHARDGUARD_CHROMIUM`,
    );
  // Root in a container has no user namespace for Chromium's sandbox.
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

/**
 * An opened report page and what it did: console errors, uncaught errors,
 * and every request that was not the file itself.
 */
export interface OpenedReport {
  page: Page;
  errors: string[];
  requests: string[];
  /** ms from navigation until the page's script marked it ready. */
  openMs: number;
}

/** Opens `file` (absolute) from file:// and waits until the page's script is done (`body[data-ready]`). */
export async function openReport(
  browser: Browser,
  file: string,
  viewport = { width: 1280, height: 900 },
): Promise<OpenedReport> {
  const page = await browser.newPage();
  await page.setViewport(viewport);
  const errors: string[] = [];
  const requests: string[] = [];
  const url = `file://${file}`;
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => {
    if (r.url() !== url) requests.push(r.url());
  });
  const t0 = performance.now();
  await page.goto(url, { waitUntil: "load", timeout: 60_000 });
  await page.waitForSelector("body[data-ready]", { timeout: 60_000 });
  return { page, errors, requests, openMs: performance.now() - t0 };
}

/** The "showing N of M tests" figures of the table. */
export async function shownCount(page: Page): Promise<{ shown: number; total: number }> {
  const text = await page.$eval("#count", (e) => e.textContent ?? "");
  const m = /showing ([\d,]+) of ([\d,]+) tests/.exec(text);
  if (!m) throw new Error(`no count in ${JSON.stringify(text)}`);
  return { shown: Number(m[1]!.replace(/,/g, "")), total: Number(m[2]!.replace(/,/g, "")) };
}

/** Clicks a status filter button (`all`, a test status, or `flaky`). */
export async function clickFilter(page: Page, status: string): Promise<void> {
  await page.click(`#filters .filter[data-status="${status}"]`);
}

/** Types into the search box and waits out its debounce. */
export async function searchFor(page: Page, text: string): Promise<void> {
  // Cleared as a user would (an input event), then typed key by key.
  await page.$eval("#search", (e) => {
    (e as unknown as { value: string }).value = "";
    e.dispatchEvent(new Event("input", { bubbles: true }));
  });
  if (text !== "") await page.type("#search", text);
  await new Promise((r) => setTimeout(r, 400));
}

/** The rendered rows' statuses (only the rows in view exist). */
export async function renderedStatuses(page: Page): Promise<string[]> {
  return page.$$eval("#rows .row .status .badge:first-child", (es) => es.map((e) => e.textContent ?? ""));
}
