/**
 * report.html (runner/report/html.ts): what it embeds, and the page of the
 * hostile suite's real run opened in headless Chromium (test/helpers/browser.ts):
 * no console error and no request, a lane per job slot and a bar per shard
 * with its kill marked, the filters, the search and a test's detail with
 * its failure text and redacted log tail. 100,000 tests and a merged slice
 * run: test/report-html-scale.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "puppeteer-core";
import { describeRun } from "../runner/commands/bg/status.ts";
import { sentinelLine } from "../runner/commands/bg/record.ts";
import { checkReportPaths } from "../runner/commands/preflight-checks.ts";
import { holdsOurReport } from "../runner/engine/refused.ts";
import { parseArgs } from "../runner/config/args.ts";
import { resolveSettings } from "../runner/config/load.ts";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { renderHtml, shardResources } from "../runner/report/html.ts";
import { PAGE_SCRIPT, PAGE_CSS } from "../runner/report/html-page.ts";
import { layoutTimeline } from "../runner/report/html-timeline.ts";
import type { RunReport, ShardResult } from "../runner/results/report-model.ts";
import { makeReport } from "./helpers/report-fixtures.ts";
import { clickFilter, launchBrowser, openReport, renderedStatuses, searchFor, shownCount } from "./helpers/browser.ts";
import {
  fixtureFilesIn,
  HOSTILE_FIXTURES,
  makeSuite,
  processesWithEnvEntry,
  readReport,
  runCli,
  survivors,
} from "./helpers/cli.ts";

const shard = (over: Partial<ShardResult>): ShardResult =>
  ({
    index: 1,
    slug: "a",
    files: ["a.test.ts"],
    status: "failed",
    exitCode: 1,
    signal: null,
    killedBy: null,
    durationMs: 1000,
    startedAt: "2026-01-01T00:00:00.000Z",
    logPath: "/logs/shard-1-a.log",
    logIncomplete: false,
    leftovers: [],
    testSource: "junit",
    tests: [],
    ...over,
  }) as ShardResult;

const reportOf = (shards: ShardResult[]): RunReport =>
  makeReport(shards, {
    runId: "r1",
    startedAt: "2026-01-01T00:00:00.000Z",
    finishedAt: "2026-01-01T00:00:05.000Z",
    durationMs: 5000,
    root: "/root",
    bun: { version: "1.4.4", path: "/bun" },
    settings: { jobs: 2, timeoutMs: 10_000, graceMs: 1000, filesPerShard: 1, bunArgs: [] },
    summary: {
      shards: { passed: 0, failed: 1, "timed-out": 0, crashed: 0, "never-started": 0, "skipped-by-diff": 0, total: 1 },
      tests: {
        passed: 0,
        failed: 1,
        skipped: 0,
        todo: 0,
        "timed-out": 0,
        crashed: 0,
        "never-started": 0,
        "skipped-by-diff": 0,
        total: 1,
        flaky: 0,
      },
    },
  });

/** The page's embedded data, parsed back. */
function embedded(html: string): {
  tests: unknown[][];
  files: string[];
  shards: { resources: unknown; tail: string | null }[];
} {
  const m = /<script type="application\/json" id="sg-data">([\s\S]*?)<\/script>/.exec(html);
  if (!m) throw new Error("no data element");
  return JSON.parse(m[1]!);
}

describe("the html setting", () => {
  const resolve = (argv: string[], env: Record<string, string> = {}, bunfig?: string) => {
    const dir = makeSuite(
      bunfig === undefined ? { "a.test.ts": "" } : { "a.test.ts": "", "bunfig.toml": bunfig },
      "sg-html-config-",
    );
    return {
      dir,
      settings: resolveSettings({ args: parseArgs(argv, "run"), env, cwd: dir, defaultBun: process.execPath }),
    };
  };
  const refusal = (argv: string[], env: Record<string, string> = {}, bunfig?: string) => {
    try {
      resolve(argv, env, bunfig);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error("accepted");
  };

  test(
    "default OUT/report.html; bunfig.toml (from the root) < SHARDGUARD_HTML < --html (from the working " + "directory)",
    () => {
      const plain = resolve([]);
      expect(plain.settings.html).toBe(path.join(plain.dir, ".shardguard", "report.html"));
      const out = resolve(["--out", "o"]);
      expect(out.settings.html).toBe(path.join(out.dir, "o", "report.html"));
      const toml = '[shardguard]\nhtml = "t/page.html"\n';
      const fromToml = resolve([], {}, toml);
      expect(fromToml.settings.html).toBe(path.join(fromToml.dir, "t", "page.html"));
      const fromEnv = resolve([], { SHARDGUARD_HTML: "e.html" }, toml);
      expect(fromEnv.settings.html).toBe(path.join(fromEnv.dir, "e.html"));
      const fromFlag = resolve(["--html", "f.html"], { SHARDGUARD_HTML: "e.html" }, toml);
      expect(fromFlag.settings.html).toBe(path.join(fromFlag.dir, "f.html"));
    },
  );

  test("bad values: one line naming the source and what is accepted", () => {
    expect(refusal(["--html", ""])).toBe('invalid --html "": expected a non-empty path');
    expect(refusal([], {}, "[shardguard]\nhtml = 3\n")).toBe(
      "invalid bunfig.toml [shardguard] html 3: expected a non-empty path",
    );
    expect(refusal(["--html", "r.json", "--json", "r.json"])).toMatch(
      /^invalid --html ".*r\.json": it is also the --json path; each report needs its own file$/,
    );
    const { dir, settings } = resolve(["--html", "sub"]);
    mkdirSync(path.join(dir, "sub"));
    expect(() => checkReportPaths(settings, [])).toThrow(
      /^invalid --html ".*sub": it is a directory; expected a regular file path/,
    );
    expect(() =>
      checkReportPaths({ ...settings, html: path.join(dir, "a.test.ts") }, [path.join(dir, "a.test.ts")]),
    ).toThrow(/--html .*: it is one of the planned test files/);
  });

  test("a refused run removes an earlier report.html, and only one shardguard wrote", () => {
    const { dir } = resolve([]);
    const ours = path.join(dir, "ours.html");
    const theirs = path.join(dir, "theirs.html");
    writeFileSync(ours, renderHtml(reportOf([shard({})])));
    writeFileSync(theirs, "<!DOCTYPE html><title>mine</title>");
    expect(holdsOurReport(ours, "html")).toBe(true);
    expect(holdsOurReport(theirs, "html")).toBe(false);
  });
});

test("status of a finished background run names its report.html; while it runs, not yet", async () => {
  const dir = makeSuite({}, "sg-html-status-");
  const runDir = path.join(dir, "out", "runs", "r1");
  mkdirSync(runDir, { recursive: true });
  const report = reportOf([shard({})]);
  writeFileSync(path.join(runDir, "report.json"), JSON.stringify(report));
  writeFileSync(path.join(runDir, "report.html"), renderHtml(report));
  const log = path.join(dir, "bg.log");
  const record = {
    id: "b1",
    backend: "local" as const,
    log,
    root: dir,
    out: path.join(dir, "out"),
    lock: "default",
    pid: null,
    procStart: null,
    startedAt: new Date().toISOString(),
    runId: "r1",
    ci: null,
  };
  writeFileSync(log, `header\n${sentinelLine(1)}\n`);
  const lines = await describeRun(record);
  expect(lines).toContain(`  report ${path.join(runDir, "report.html")}`);
  expect(lines.some((l) => l.includes("is gone"))).toBe(false);
  writeFileSync(log, "header\n");
  expect((await describeRun(record)).some((l) => l.includes("report.html"))).toBe(false);
});

describe("report.html's text", () => {
  const hostileName = "ends </script><script>alert(1)</script> and <!-- here \u2028 line \u2029 para";
  const report = reportOf([
    shard({
      tests: [
        {
          name: `outer > ${hostileName}`,
          file: "a.test.ts",
          status: "failed",
          durationMs: 12.34,
          retries: 1,
          flaky: false,
          attemptFailures: [{ type: "failure", errorName: "Error", message: "first </script>" }],
          synthetic: false,
          failure: {
            type: "failure",
            errorName: "AssertionError",
            message: "\u001b[31mred\u001b[0m </SCRIPT >",
            details: "x".repeat(70_000),
          },
        },
      ],
    }),
  ]);
  const html = renderHtml(report, { logTails: new Map([[1, "tail </script> line"]]) });

  test("a test name, failure or log tail cannot end the data element, and reads back the same", () => {
    // The only closing script tags are the page's own two.
    expect(html.match(/<\/script/gi)?.length).toBe(2);
    expect(html).not.toContain("\u2028");
    expect(html).not.toContain("\u2029");
    const data = embedded(html);
    expect(data.tests[0]![2]).toBe(`outer > ${hostileName}`);
    expect(data.shards[0]!.tail).toBe("tail </script> line");
    // Failure texts as in report.json: escapes out, long details capped naming the log.
    expect(data.tests[0]![8]).toBe("red </SCRIPT >");
    expect(String(data.tests[0]![9]).length).toBeLessThan(70_000);
    expect(String(data.tests[0]![9])).toContain("full log: /logs/shard-1-a.log");
    expect(data.tests[0]![10]).toBe("attempt 1: Error: first </script>");
  });

  test("nothing is fetched: no external reference, and a policy that forbids it", () => {
    expect(html).toContain(`content="default-src 'none'`);
    expect(html).not.toMatch(/\b(src|href)=["']?(https?:)?\/\//i);
    expect(PAGE_SCRIPT).not.toMatch(/<\/script/i);
    expect(PAGE_CSS).not.toMatch(/<\/style|@import|url\(http/i);
  });

  test("a shard's resources are shown when present and of the agreed shape, else left out", () => {
    const resources = {
      wallMs: 1000,
      cpuUserMs: 800,
      cpuSystemMs: 50,
      peakRssBytes: 64 << 20,
      method: "cgroup",
      precision: "exact (cgroup v2)",
    };
    expect(shardResources({ ...shard({}), resources } as ShardResult)).toEqual(resources as never);
    expect(shardResources(shard({}))).toBeNull();
    const data = embedded(renderHtml(reportOf([{ ...shard({}), resources } as ShardResult])));
    expect(data.shards[0]!.resources).toEqual(resources);
  });

  test("a shard's resource locks, exclusive flag and wait reach the page's data; a run without them shows none", () => {
    const held = {
      ...shard({}),
      locks: ["db"],
      exclusive: true,
      waitedMs: 1500.4,
      waitedFor: ["resource db"],
    } as ShardResult;
    const data = embedded(renderHtml(reportOf([held, shard({})])));
    expect(data.shards[0]).toMatchObject({
      locks: ["db"],
      exclusive: true,
      waited: { ms: 1500.4, for: ["resource db"] },
    });
    expect(data.shards[1]).toMatchObject({ locks: [], exclusive: false, waited: null });
  });

  test(
    "the timeline: a lane per job slot, a shard without timeline data on the lowest free slot, the chain is " +
      "the lane that ends last",
    () => {
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
      const layout = layoutTimeline(
        reportOf([
          shard({
            index: 1,
            startedAt: at(0),
            durationMs: 1000,
            timeline: { slot: 2, sigtermMs: null, sigkillMs: null, goneMs: 1010 },
          }),
          shard({
            index: 2,
            startedAt: at(0),
            durationMs: 3000,
            status: "timed-out",
            timeline: { slot: 1, sigtermMs: 2000, sigkillMs: 2900, goneMs: 3020 },
          }),
          shard({ index: 3, startedAt: at(1.5), durationMs: 500 }),
          shard({ index: 4, startedAt: null, durationMs: 0, status: "never-started" }),
        ]),
      );
      expect(layout.lanes.map((l) => [l.slot, l.bars.map((b) => b.shard)])).toEqual([
        [1, [1]],
        [2, [0, 2]],
      ]);
      expect(layout.chain).toEqual({ lane: 0, shards: [1], busyMs: 3020 });
      expect(layout.lanes[0]!.bars[0]).toMatchObject({ sigtermMs: 2000, sigkillMs: 2900, endMs: 3020 });
      // Lane 2 is busy 1010 + 500 ms of the machine's 3020.
      expect(layout.lanes[1]!.idleMs).toBe(3020 - 1510);
    },
  );

  test(
    "the timeline draws the slots a plan could fill: an " + "unused one among them, none past the number of shards",
    () => {
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
      const one = shard({
        index: 1,
        startedAt: at(0),
        durationMs: 1000,
        timeline: { slot: 1, sigtermMs: null, sigkillMs: null, goneMs: 1000 },
      });
      const two = shard({
        index: 2,
        startedAt: at(2),
        durationMs: 1000,
        timeline: { slot: 1, sigtermMs: null, sigkillMs: null, goneMs: 1000 },
      });
      const withJobs = (jobs: number, shards: ShardResult[]) =>
        layoutTimeline({ ...reportOf(shards), settings: { ...reportOf(shards).settings, jobs } });
      // Two shards, one after the other, with --jobs 4: slot 2 could have run one of them, slots 3 and 4 nothing.
      expect(withJobs(4, [one, two]).lanes.map((l) => [l.slot, l.bars.length, l.idleMs])).toEqual([
        [1, 2, 1000],
        [2, 0, 3000],
      ]);
      expect(withJobs(1, [one, two]).lanes.map((l) => l.slot)).toEqual([1]);
    },
  );
});

describe("report.html of the hostile suite, in headless Chromium", () => {
  const secret = `sk-live-${randomBytes(16).toString("hex")}`;
  let dir: string;
  let browser: Browser;
  let report: RunReport;
  let html: string;
  let htmlPath: string;

  beforeAll(async () => {
    dir = makeSuite(fixtureFilesIn(HOSTILE_FIXTURES), "sg-html-hostile-");
    const pidDir = path.join(dir, "pids");
    mkdirSync(pidDir);
    const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "7", "--grace", "1"], {
      env: { SG_TEST_API_KEY: secret, SG_HOSTILE_PIDS: pidDir },
      limitMs: 90_000,
    });
    expect(run.code).toBe(1);
    report = readReport(dir);
    htmlPath = path.join(dir, ".shardguard", "report.html");
    html = readFileSync(htmlPath, "utf8");
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    for (const pid of new Set([
      ...(report ? survivors(report.runId) : []),
      ...processesWithEnvEntry(`SG_HOSTILE_PIDS=${path.join(dir, "pids")}`),
    ])) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test("the run's own copy is the same page, and the secret the tests printed is redacted from it", () => {
    expect(readFileSync(path.join(dir, ".shardguard", "runs", report.runId, "report.html"), "utf8")).toBe(html);
    expect(html).not.toContain(secret);
    expect(html).toContain("[redacted:SG_TEST_API_KEY]");
  });

  test("opens without a console error or a request; header, lanes and bars as in report.json", async () => {
    const { page, errors, requests } = await openReport(browser, htmlPath);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    const counts = await page.$$eval("#counts .count", (es) =>
      Object.fromEntries(
        es.map((e) => [e.getAttribute("data-count"), Number(e.querySelector("b")!.textContent!.replace(/,/g, ""))]),
      ),
    );
    const t = report.summary.tests;
    expect(counts).toMatchObject({
      planned: t.total,
      passed: t.passed,
      failed: t.failed,
      "timed-out": t["timed-out"],
      crashed: t.crashed,
      "never-started": t["never-started"],
      flaky: t.flaky,
    });
    expect(await page.$eval("#exit-code", (e) => e.textContent)).toBe("exit 1");
    expect(await page.$eval("#versions", (e) => e.textContent)).toBe(
      `shardguard ${report.tool.version} · Bun ${report.bun.version}`,
    );
    expect(await page.$$eval("#timeline .lane", (es) => es.length)).toBe(2);
    expect(await page.$$eval("#timeline .bar", (es) => es.length)).toBe(report.shards.length);
    // Three timed-out shards got SIGTERM; the one that ignores it, SIGKILL after the grace period.
    expect(await page.$$eval("#timeline .bar.st-timed-out .term", (es) => es.length)).toBe(3);
    const spin = report.shards.findIndex((s) => s.files[0] === "sigterm-spin.test.ts");
    expect(await page.$$eval(`#timeline .bar[data-shard="${spin}"] .kill`, (es) => es.length)).toBe(1);
    expect(await page.$eval("#timeline-caption", (e) => e.textContent)).toMatch(
      /idle slot time .*; longest chain: slot [12], /,
    );
    expect(await shownCount(page)).toEqual({ shown: t.total, total: t.total });
    await page.close();
  });

  test("a bar's tooltip names its files, reason and figures, on hover and on keyboard focus", async () => {
    const { page, errors } = await openReport(browser, htmlPath);
    const spin = report.shards.findIndex((s) => s.files[0] === "sigterm-spin.test.ts");
    await page.hover(`#timeline .bar[data-shard="${spin}"]`);
    const tip = await page.$eval("#tip", (e) => ({
      hidden: (e as unknown as { hidden: boolean }).hidden,
      text: e.textContent ?? "",
    }));
    expect(tip.hidden).toBe(false);
    expect(tip.text).toContain("sigterm-spin.test.ts");
    expect(tip.text).toContain(report.shards[spin]!.reason);
    expect(tip.text).toMatch(/SIGTERM at [\d.]+ s · SIGKILL at [\d.]+ s/);
    await page.mouse.move(0, 0);
    // An SVG element: focused as the keyboard would (it has tabindex=0).
    await page.$eval(`#timeline .bar[data-shard="0"]`, (e) => (e as unknown as { focus(): void }).focus());
    expect(await page.$eval("#tip", (e) => e.textContent)).toContain(report.shards[0]!.files[0]!);
    // Enter on a bar shows only its tests.
    await page.keyboard.press("Enter");
    expect((await shownCount(page)).shown).toBe(report.shards[0]!.tests.length);
    expect(errors).toEqual([]);
    await page.close();
  });

  test("the status filters, the search and a failed test's detail with its failure text and log tail", async () => {
    const { page, errors } = await openReport(browser, htmlPath);
    const t = report.summary.tests;
    await clickFilter(page, "timed-out");
    expect((await shownCount(page)).shown).toBe(t["timed-out"]);
    expect(new Set(await renderedStatuses(page))).toEqual(new Set(["timed-out"]));
    await clickFilter(page, "failed");
    expect((await shownCount(page)).shown).toBe(t["timed-out"] + t.failed);
    await clickFilter(page, "all");
    expect((await shownCount(page)).shown).toBe(t.total);
    await searchFor(page, "prints-secret");
    const inFile = report.shards.find((s) => s.files[0] === "prints-secret.test.ts")!.tests;
    expect((await shownCount(page)).shown).toBe(inFile.length);
    await page.click("#rows .row");
    await page.waitForSelector("#detail:not([hidden])");
    const detail = await page.$eval("#detail", (e) => e.textContent ?? "");
    expect(detail).toContain(inFile[0]!.failure!.message.slice(0, 40));
    expect(detail).toContain("Log tail of shard");
    expect(detail).toContain("[redacted:SG_TEST_API_KEY]");
    expect(detail).not.toContain(secret);
    expect(errors).toEqual([]);
    await page.close();
  });
});
