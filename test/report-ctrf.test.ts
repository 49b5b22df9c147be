/**
 * renderCtrf: the CTRF document (ctrf.json) against the JSON Schema of the
 * `ctrf` reference implementation, the docs/reports.md status mapping, counts, and
 * one real run that writes OUT/ctrf.json and the run's own copy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { CURRENT_SPEC_VERSION, schema as ctrfSchema, validate } from "ctrf";
import { TEST_STATUSES, type RunReport, type TestStatus } from "../runner/results/report-model.ts";
import { CTRF_SPEC_VERSION, CTRF_STATUS, renderCtrf, type CtrfReport } from "../runner/report/ctrf.ts";
import { fixtureFiles, makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { failedShard, makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

afterAll(removeSuites);

/** docs/reports.md, CTRF section. */
const EXPECTED: Record<TestStatus, string> = {
  passed: "passed",
  failed: "failed",
  skipped: "skipped",
  todo: "pending",
  "skipped-by-diff": "skipped",
  "timed-out": "failed",
  crashed: "failed",
  "never-started": "other",
};

/** Every test status at least once, a flaky test, a synthetic entry, a Bun-less never-started shard. */
function sampleReport(fields: Partial<RunReport> = {}): RunReport {
  return makeReport(
    [
      failedShard(1, [
        makeTest({ name: "a > passes", file: "t/a.test.ts", line: 3 }),
        makeTest({
          name: "a > fails",
          file: "t/a.test.ts",
          line: 7,
          status: "failed",
          durationMs: 4.6,
          failure: {
            type: "failure",
            errorName: "AssertionError",
            message: "\x1b[31mexpected\x1b[39m 1",
            details: "\x1b[2mat a.test.ts:8\x1b[22m",
          },
        }),
        makeTest({
          name: "flaky",
          file: "t/a.test.ts",
          retries: 2,
          flaky: true,
          attemptFailures: [
            { type: "failure", errorName: "Error", message: "\x1b[2Kfirst try" },
            { type: "failure", errorName: "Error", message: "second try" },
          ],
        }),
        makeTest({ name: "skipped", file: "t/a.test.ts", status: "skipped", durationMs: 0 }),
        makeTest({ name: "todo", file: "t/a.test.ts", status: "todo", durationMs: 0 }),
      ]),
      makeShard({
        index: 2,
        status: "timed-out",
        exitCode: null,
        signal: "SIGTERM",
        killedBy: "timeout",
        reason: "killed after 3 s wall-clock timeout",
        testSource: "events",
        tests: [
          makeTest({ name: "before", file: "t/b.test.ts" }),
          makeTest({
            name: "spins",
            file: "t/b.test.ts",
            status: "timed-out",
            durationMs: 2999.7,
            failure: {
              type: "timeout",
              message: "in flight when the shard ended: killed after 3 s wall-clock timeout",
            },
          }),
          makeTest({
            name: "after",
            file: "t/b.test.ts",
            status: "never-started",
            durationMs: 0,
            failure: { type: "never-started", message: "never started: killed after 3 s wall-clock timeout" },
          }),
        ],
      }),
      makeShard({
        index: 3,
        status: "crashed",
        exitCode: null,
        signal: "SIGSEGV",
        reason: "ended by SIGSEGV",
        testSource: "synthetic",
        tests: [
          makeTest({
            name: "(whole file)",
            file: "t/c.test.ts",
            line: undefined,
            status: "crashed",
            durationMs: 0,
            synthetic: true,
            failure: { type: "crash", message: "ended by SIGSEGV" },
          }),
        ],
      }),
      makeShard({
        index: 4,
        status: "skipped-by-diff",
        exitCode: null,
        startedAt: null,
        logPath: null,
        durationMs: 0,
        reason: "not selected by the diff",
        testSource: "synthetic",
        tests: [
          makeTest({
            name: "(whole file)",
            file: "t/d.test.ts",
            line: undefined,
            status: "skipped-by-diff",
            durationMs: 0,
            synthetic: true,
            failure: { type: "skipped-by-diff", message: "not selected by the diff" },
          }),
        ],
      }),
    ],
    fields,
  );
}

/**
 * Paths of every key that the schema does not define for its object,
 * outside `extra` (whose content is free by definition).
 */
function undefinedKeys(
  value: unknown,
  node: Record<string, unknown>,
  at: string,
  root: Record<string, unknown>,
): string[] {
  const resolved =
    typeof node.$ref === "string"
      ? (root.definitions as Record<string, Record<string, unknown>>)[node.$ref.split("/").pop()!]!
      : node;
  if (Array.isArray(value)) {
    const items = resolved.items as Record<string, unknown> | undefined;
    return items ? value.flatMap((v, i) => undefinedKeys(v, items, `${at}[${i}]`, root)) : [];
  }
  if (value === null || typeof value !== "object") return [];
  const props = resolved.properties as Record<string, Record<string, unknown>> | undefined;
  if (!props) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    if (key === "extra") return [];
    const sub = props[key];
    return sub === undefined ? [`${at}.${key}`] : undefinedKeys(v, sub, `${at}.${key}`, root);
  });
}

describe("renderCtrf", () => {
  const report = sampleReport();
  const text = renderCtrf(report);
  const doc = JSON.parse(text) as CtrfReport;
  const ourTests = report.shards.flatMap((s) => s.tests);

  test("is valid against the ctrf reference implementation's schema", () => {
    const result = validate(doc);
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  test("names CTRF and the current spec version", () => {
    expect(doc.reportFormat).toBe("CTRF");
    expect(doc.specVersion).toBe(CTRF_SPEC_VERSION);
    expect(CTRF_SPEC_VERSION).toBe(CURRENT_SPEC_VERSION);
    expect(doc.results.tool).toEqual({ name: "shardguard", version: "0.1.0" });
    expect(text.endsWith("}\n")).toBe(true);
  });

  test("the fixture covers every test status", () => {
    expect(new Set(ourTests.map((t) => t.status))).toEqual(new Set(TEST_STATUSES));
  });

  test("maps every status per docs/reports.md and keeps ours as rawStatus", () => {
    expect(CTRF_STATUS).toEqual(EXPECTED as typeof CTRF_STATUS);
    expect(doc.results.tests.map((t) => [t.name, t.rawStatus, t.status])).toEqual(
      ourTests.map((t) => [t.name, t.status, EXPECTED[t.status]]),
    );
  });

  test("one CTRF test per test entry of every shard, and the summary counts them", () => {
    const { summary, tests } = doc.results;
    expect(summary.tests).toBe(tests.length);
    expect(tests.length).toBe(ourTests.length);
    for (const status of ["passed", "failed", "skipped", "pending", "other"] as const) {
      expect(summary[status]).toBe(tests.filter((t) => t.status === status).length);
    }
    expect(summary.passed + summary.failed + summary.skipped + summary.pending + summary.other).toBe(summary.tests);
    expect([summary.passed, summary.failed, summary.skipped, summary.pending, summary.other]).toEqual([3, 3, 2, 1, 1]);
    expect(summary.flaky).toBe(1);
    expect(summary.suites).toBe(4);
  });

  test("times are integer milliseconds since the epoch; durations whole ms", () => {
    const { summary, tests } = doc.results;
    expect(summary.start).toBe(Date.parse("2025-01-02T03:04:00.000Z"));
    expect(summary.stop).toBe(Date.parse("2025-01-02T03:05:00.000Z"));
    expect(summary.duration).toBe(60_000);
    expect(doc.timestamp).toBe("2025-01-02T03:05:00.000Z");
    for (const t of tests) expect(Number.isInteger(t.duration)).toBe(true);
    expect(tests.find((t) => t.name === "spins")!.duration).toBe(3000);
    expect(tests.find((t) => t.name === "a > fails")!.duration).toBe(5);
  });

  test("an interim report stops at startedAt + durationMs", () => {
    const interim = JSON.parse(
      renderCtrf(sampleReport({ completed: false, finishedAt: null, exitCode: null, durationMs: 1234.4 })),
    ) as CtrfReport;
    expect(validate(interim).valid).toBe(true);
    expect(interim.results.summary.stop).toBe(interim.results.summary.start + 1234);
    expect(interim.results.extra).toMatchObject({ completed: false, exitCode: null });
  });

  test("file, line, suite, failure message and trace (ANSI removed), failure type in extra", () => {
    const fails = doc.results.tests.find((t) => t.name === "a > fails")!;
    expect(fails).toMatchObject({
      filePath: "t/a.test.ts",
      suite: ["t/a.test.ts"],
      line: 7,
      message: "expected 1",
      trace: "at a.test.ts:8",
      retries: 0,
      flaky: false,
      extra: { shard: 1, synthetic: false, failureType: "AssertionError" },
    });
    const passes = doc.results.tests.find((t) => t.name === "a > passes")!;
    expect(passes.message).toBeUndefined();
    expect(passes.trace).toBeUndefined();
    expect(passes.retryAttempts).toBeUndefined();
    expect(passes.extra).toEqual({ shard: 1, synthetic: false });
  });

  test("a flaky test passes with flaky, retries and its failed attempts", () => {
    const flaky = doc.results.tests.find((t) => t.name === "flaky")!;
    expect(flaky).toMatchObject({ status: "passed", rawStatus: "passed", flaky: true, retries: 2 });
    expect(flaky.retryAttempts).toEqual([
      { attempt: 1, status: "failed", message: "first try", extra: { type: "Error" } },
      { attempt: 2, status: "failed", message: "second try", extra: { type: "Error" } },
    ]);
  });

  test("synthetic entries and shard indexes are under extra", () => {
    const crashed = doc.results.tests.find((t) => t.rawStatus === "crashed")!;
    expect(crashed).toMatchObject({
      status: "failed",
      name: "(whole file)",
      extra: { shard: 3, synthetic: true, failureType: "crash" },
    });
    expect(crashed.line).toBeUndefined();
    const byDiff = doc.results.tests.find((t) => t.rawStatus === "skipped-by-diff")!;
    expect(byDiff).toMatchObject({ status: "skipped", extra: { shard: 4, synthetic: true } });
  });

  test("run-level fields of ours are under results.extra", () => {
    expect(doc.results.extra).toEqual({
      runId: "run-1",
      completed: true,
      cancelledBy: null,
      exitCode: 1,
      shards: report.shards.map((s) => ({ index: s.index, status: s.status, reason: s.reason, logPath: s.logPath })),
    });
  });

  test("writes nothing outside extra that the CTRF schema does not define", () => {
    const root = ctrfSchema as Record<string, unknown>;
    expect(undefinedKeys(doc, root, "$", root)).toEqual([]);
    // The walker itself notices a stray key.
    const stray = { ...doc, results: { ...doc.results, runId: "x" } };
    expect(undefinedKeys(stray, root, "$", root)).toEqual(["$.results.runId"]);
    expect(validate(stray).valid).toBe(false);
  });

  test("an empty test name becomes a non-empty one (CTRF requires it)", () => {
    const r = makeReport([makeShard({ index: 1, tests: [makeTest({ name: "", file: "t/e.test.ts" })] })]);
    const d = JSON.parse(renderCtrf(r)) as CtrfReport;
    expect(validate(d).valid).toBe(true);
    expect(d.results.tests[0]!.name).toBe("(unnamed test)");
  });

  test("a run without shards is a valid, empty document", () => {
    const d = JSON.parse(renderCtrf(makeReport([]))) as CtrfReport;
    expect(validate(d).valid).toBe(true);
    expect(d.results.summary.tests).toBe(0);
    expect(d.results.tests).toEqual([]);
  });
});

describe("a real run writes OUT/ctrf.json (spin, fail, pass; --timeout 3 --grace 1)", () => {
  let dir = "";
  let ctrf: CtrfReport;
  let report: RunReport;

  beforeAll(async () => {
    dir = makeSuite(fixtureFiles("spin", "fail", "pass"));
    const run = await runCli(["run", "--root", dir, "--timeout", "3", "--grace", "1"]);
    expect(run.code).toBe(1);
    report = readReport(dir);
    ctrf = JSON.parse(readFileSync(path.join(dir, ".shardguard", "ctrf.json"), "utf8")) as CtrfReport;
  }, 60_000);

  test("is valid CTRF and counts what report.json lists", () => {
    expect(validate(ctrf).errors).toEqual([]);
    expect(ctrf.results.summary.tests).toBe(report.summary.tests.total);
    expect(ctrf.results.tests.length).toBe(report.summary.tests.total);
    expect(ctrf.results.extra).toMatchObject({ runId: report.runId, completed: true, exitCode: 1 });
  });

  test("the spinning test is failed (timed-out), the one after it other (never-started)", () => {
    const spin = ctrf.results.tests.filter((t) => t.filePath === "spin.test.ts");
    expect(spin.map((t) => [t.name, t.status, t.rawStatus])).toEqual([
      ["before", "passed", "passed"],
      ["spins forever", "failed", "timed-out"],
      ["after", "other", "never-started"],
    ]);
    expect(spin[1]!.message).toContain("killed after 3 s wall-clock timeout");
  });

  test("the run's own copy is the same document", () => {
    const copy = path.join(dir, ".shardguard", "runs", report.runId, "ctrf.json");
    expect(existsSync(copy)).toBe(true);
    expect(JSON.parse(readFileSync(copy, "utf8"))).toEqual(ctrf);
  });
});
