/**
 * report.html at scale and merged, in headless Chromium (test/helpers/browser.ts):
 * a real run of one file of 100,000 tests (some failing, names holding
 * `</script>` and U+2028) opens with only the rows in view in the DOM, filters
 * and searches all of them; the merged report of a two-slice run has a lane
 * per slot of each slice. Timings of opening it: bench/html-report.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "puppeteer-core";
import { renderHtml } from "../runner/report/html.ts";
import { REPORT_SCHEMA_VERSION, summarize, type RunReport, type ShardResult } from "../runner/results/report-model.ts";
import { clickFilter, launchBrowser, openReport, renderedStatuses, searchFor, shownCount } from "./helpers/browser.ts";
import { makeSuite, readReport, runCli, tempDir } from "./helpers/cli.ts";

const TESTS = 100_000;
const FAIL_EVERY = 10_000;

/** One file of `TESTS` tests in describe blocks of 1,000; every FAIL_EVERY-th fails; one name ends a script element. */
const bigFile = `import { describe, expect, test } from "bun:test";
for (let d = 0; d < ${TESTS / 1000}; d++) {
  describe("block " + d, () => {
    for (let i = 0; i < 1000; i++) {
      const n = d * 1000 + i;
      const name = n === 4242 ? "odd </script><!-- \\u2028 name" : "case " + n;
      test(name, () => { if (n % ${FAIL_EVERY} === ${FAIL_EVERY - 1}) expect(n).toBe(-1); });
    }
  });
}
`;

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

describe(`report.html of a real run of ${TESTS.toLocaleString("en-US")} tests`, () => {
  let dir: string;
  let report: RunReport;
  let htmlPath: string;

  beforeAll(async () => {
    dir = makeSuite({ "big.test.ts": bigFile }, "sg-html-big-");
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "120"], { limitMs: 150_000 });
    expect(run.code).toBe(1);
    report = readReport(dir);
    htmlPath = path.join(dir, ".shardguard", "report.html");
  }, 160_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("the file grows modestly with the tests: under 100 bytes a test", () => {
    expect(report.summary.tests.total).toBe(TESTS);
    const bytes = statSync(htmlPath).size;
    expect(bytes).toBeLessThan(TESTS * 100);
    // Every test is in it, the odd name as well, still inside the data element.
    expect(readFileSync(htmlPath, "utf8").match(/<\/script/gi)?.length).toBe(2);
  });

  test("opens without an error, with only the rows in view in " +
    "the DOM; the filters and the search reach every test", async () => {
    const { page, errors, requests } = await openReport(browser, htmlPath);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    expect(await shownCount(page)).toEqual({ shown: TESTS, total: TESTS });
    const rendered = await page.$$eval("#rows .row", (es) => es.length);
    expect(rendered).toBeGreaterThan(5);
    expect(rendered).toBeLessThan(200);
    await clickFilter(page, "failed");
    expect((await shownCount(page)).shown).toBe(TESTS / FAIL_EVERY);
    expect(new Set(await renderedStatuses(page))).toEqual(new Set(["failed"]));
    await clickFilter(page, "failed");
    await searchFor(page, "case 9999");
    // "case 9999" and "case 99990"-"case 99999".
    expect((await shownCount(page)).shown).toBe(11);
    await searchFor(page, "</script><!-- \u2028");
    expect((await shownCount(page)).shown).toBe(1);
    expect(await page.$eval("#rows .row .name", (e) => e.textContent)).toBe("odd </script><!-- \u2028 name");
    expect(await page.$eval("#rows .row .describe", (e) => e.textContent)).toBe("block 4");
    // Scrolled to the end, the last rows are drawn.
    await searchFor(page, "");
    await page.$eval("#rows", (e) => (e.scrollTop = e.scrollHeight));
    await page.waitForFunction(() =>
      [...document.querySelectorAll("#rows .row .name")].some((e) => e.textContent === "case 99999"),
    );
    await clickFilter(page, "failed");
    await page.click("#rows .row");
    await page.waitForSelector("#detail:not([hidden])");
    const detail = await page.$eval("#detail", (e) => e.textContent ?? "");
    expect(detail).toContain("case 9999");
    expect(detail).toContain("expect(received).toBe(expected)");
    // A header click sorts all 100,000 tests once: quick, the filter kept (generous bound: a shared 2-core machine).
    const t0 = performance.now();
    await page.click('#table .sort[data-sort="duration"]');
    expect(performance.now() - t0).toBeLessThan(3000);
    expect((await shownCount(page)).shown).toBe(TESTS / FAIL_EVERY);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});

describe("report.html of a merged two-slice run", () => {
  let dir: string;
  let merged: RunReport;

  beforeAll(async () => {
    const files: Record<string, string> = {};
    for (let i = 1; i <= 6; i++)
      files[`t${i}.test.ts`] =
        `import { test, expect } from "bun:test";\ntest("t${i} a", () => { expect(${i}).toBe(${i === 4 ? 0 : i}); ` +
        `});\ntest("t${i} b", async () => { await Bun.sleep(${20 * i}); });\n`;
    dir = makeSuite(files, "sg-html-merge-");
    for (const slice of ["1/2", "2/2"]) {
      const run = await runCli([
        "run",
        "--root",
        dir,
        "--jobs",
        "2",
        "--out",
        path.join(dir, `s${slice[0]}`),
        "--shard",
        slice,
      ]);
      expect(run.code).not.toBeNull();
      expect(readFileSync(path.join(dir, `s${slice[0]}`, "report.html"), "utf8")).toContain(`slice ${slice[0]} of 2`);
    }
    const run = await runCli(["merge", "s1", "s2", "--out", "m"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`HTML  ${path.join(dir, "m", "report.html")}`);
    merged = readReport(dir, path.join(dir, "m", "report.json"));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a lane per slot of each slice, a bar per shard, every test in the table", async () => {
    const { page, errors, requests } = await openReport(browser, path.join(dir, "m", "report.html"));
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    expect(await page.$eval("#merged", (e) => e.textContent)).toMatch(/^merged from 2 slices/);
    expect(await page.$$eval("#timeline .lane-label", (es) => es.map((e) => e.textContent))).toEqual([
      "slice 1 · slot 1",
      "slice 1 · slot 2",
      "slice 2 · slot 1",
      "slice 2 · slot 2",
    ]);
    expect(await page.$$eval("#timeline .bar", (es) => es.length)).toBe(6);
    expect(await shownCount(page)).toEqual({ shown: 12, total: 12 });
    await clickFilter(page, "failed");
    expect((await shownCount(page)).shown).toBe(merged.summary.tests.failed);
    await page.click("#rows .row");
    await page.waitForSelector("#detail:not([hidden])");
    expect(await page.$eval("#detail", (e) => e.textContent)).toContain("t4 a");
    await page.close();
  });
});

describe("report.html of 500 shards on 8 slots", () => {
  const SHARDS = 500;
  const JOBS = 8;
  let dir: string;

  beforeAll(() => {
    dir = tempDir("sg-html-500-");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a bar per shard on its slot, tooltips and the shard filter work, nothing logged", async () => {
    // Shards back to back on each slot, as the pool hands slots on; every 50th times out.
    const t0 = Date.UTC(2026, 0, 1);
    const shards: ShardResult[] = Array.from({ length: SHARDS }, (_, i) => {
      const slot = (i % JOBS) + 1;
      const timedOut = i % 50 === 49;
      const durationMs = timedOut ? 3000 : 200 + (i % 7) * 50;
      const file = `test/f${i}.test.ts`;
      return {
        index: i + 1,
        slug: `f${i}`,
        files: [file],
        status: timedOut ? "timed-out" : "passed",
        exitCode: timedOut ? null : 0,
        signal: timedOut ? "SIGTERM" : null,
        killedBy: timedOut ? "timeout" : null,
        durationMs,
        startedAt: new Date(t0 + Math.floor(i / JOBS) * 3100).toISOString(),
        logPath: `/logs/shard-${i + 1}.log`,
        logIncomplete: false,
        reason: timedOut ? "killed after 3 s wall-clock timeout" : "all tests passed",
        leftovers: [],
        testSource: "junit",
        timeline: { slot, sigtermMs: timedOut ? 2990 : null, sigkillMs: null, goneMs: durationMs + 2 },
        tests: [
          {
            name: `t${i}`,
            file,
            status: timedOut ? "timed-out" : "passed",
            durationMs: durationMs - 10,
            retries: 0,
            flaky: false,
            attemptFailures: [],
            synthetic: false,
          },
        ],
      };
    });
    const report: RunReport = {
      schemaVersion: REPORT_SCHEMA_VERSION,
      runId: "r500",
      completed: true,
      cancelledBy: null,
      startedAt: new Date(t0).toISOString(),
      finishedAt: new Date(t0 + 200_000).toISOString(),
      durationMs: 200_000,
      exitCode: 1,
      root: "/r",
      tool: { name: "shardguard", version: "0.1.0" },
      bun: { version: "1.4.4", path: "/bun" },
      settings: { jobs: JOBS, timeoutMs: 3000, graceMs: 1000, filesPerShard: 1, bunArgs: [] },
      summary: summarize(shards),
      preset: null,
      sweeps: { staleRuns: [], endOfRun: [] },
      plan: null,
      slice: null,
      merged: null,
      rerunOf: null,
      shards,
    };
    const file = path.join(dir, "report.html");
    writeFileSync(file, renderHtml(report));
    const { page, errors, requests } = await openReport(browser, file);
    expect(await page.$$eval("#timeline .lane", (es) => es.length)).toBe(JOBS);
    expect(await page.$$eval("#timeline .bar", (es) => es.length)).toBe(SHARDS);
    for (let slot = 1; slot <= JOBS; slot++) {
      const onSlot = await page.$$eval(`#timeline .lane[data-lane="${slot - 1}"] .bar`, (es) =>
        es.map((e) => Number(e.getAttribute("data-shard"))),
      );
      expect(onSlot).toEqual(shards.map((_, i) => i).filter((i) => i % JOBS === slot - 1));
    }
    expect(await page.$$eval("#timeline .bar.st-timed-out .term", (es) => es.length)).toBe(SHARDS / 50);
    await page.hover('#timeline .bar[data-shard="449"]');
    expect(await page.$eval("#tip", (e) => e.textContent)).toContain("test/f449.test.ts");
    await page.click('#timeline .bar[data-shard="449"]');
    expect((await shownCount(page)).shown).toBe(1);
    expect(await page.$eval("#rows .row .name", (e) => e.textContent)).toBe("t449");
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  });
});
