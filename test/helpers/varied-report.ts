/**
 * A deterministic report of any size that exercises every path of the three
 * report writers: every test status, flaky tests with attempt failures,
 * failures with terminal escapes, control characters and long details,
 * duplicate and hostile names, a file split over two shards, planned files
 * without entries (stand-ins), a sliced plan, a rerun, leftovers and sweeps,
 * and a secret to redact. The streamed writers are compared against what the
 * writers rendered before they streamed (test/report-stream.test.ts).
 */
import {
  summarize,
  TEST_STATUSES,
  type RunReport,
  type ShardResult,
  type TestResult,
  type TestStatus,
} from "../../runner/results/report-model.ts";
import { makeReport, makeShard, makeTest } from "./report-fixtures.ts";

/** The secret value the fixture's texts contain, and the variable that holds it. */
export const VARIED_SECRET = { name: "SG_FIXTURE_TOKEN", value: "tok-0123456789abcdef" };

const STATUSES: readonly TestStatus[] = TEST_STATUSES;
const NAMES = [
  "\x1b[31mred\x1b[0m name",
  "controls \x00\x01\x1f end",
  "cdata ]]> end",
  `markup <&>"' end`,
  "emoji \u{1F600}",
  "lone \uD800 half",
  "dup",
  "dup",
  "dup (2)",
  "",
];

/** Test number `i` of `file`: mostly passed, every so often one of the awkward cases. */
function variedTest(i: number, file: string): TestResult {
  const name = i % 13 === 0 ? NAMES[(i / 13) % NAMES.length]! : `suite ${i % 7} > test ${i}`;
  const status = i % 11 === 0 ? STATUSES[(i / 11) % STATUSES.length]! : "passed";
  const test = makeTest({
    name,
    file,
    status,
    durationMs: ((i * 7919) % 100_000) / 1000,
    line: i % 17 === 0 ? undefined : i + 1,
  });
  if (status !== "passed" && status !== "skipped" && status !== "todo" && i % 3 !== 0) {
    test.failure = {
      ...(i % 2 ? { type: "failure" as const, errorName: "AssertionError" } : { type: "timeout" as const }),
      message: `\x1b[1mexpected\x1b[22m ${i} to be ${i + 1}\x07 ${i % 5 === 0 ? VARIED_SECRET.value : ""}`,
      ...(i % 4 === 0 ? { details: `at line ${i}\n${"x".repeat(i % 9 === 0 ? 70_000 : 50)}\r\nEND ]]> <tag>` } : {}),
    };
  }
  if (status === "passed" && i % 29 === 0) {
    test.retries = 2;
    test.flaky = true;
    test.attemptFailures = [
      { type: "failure", errorName: "Error", message: `attempt 1 \x1b[31mfailed\x1b[0m ${VARIED_SECRET.value}` },
      { type: "failure", errorName: "TimeoutError", message: "attempt 2 timed out" },
    ];
  }
  if (i % 31 === 0) test.synthetic = true;
  return test;
}

/** A completed, sliced, rerun report of about `tests` test entries over five shards. */
export function variedReport(tests: number): RunReport {
  const per = Math.max(1, Math.floor(tests / 5));
  const range = (from: number, n: number, file: (i: number) => string) =>
    Array.from({ length: n }, (_, k) => variedTest(from + k, file(from + k)));
  const shards: ShardResult[] = [
    makeShard({
      index: 1,
      status: "failed",
      exitCode: 1,
      reason: `some tests failed ${VARIED_SECRET.value}`,
      files: ["t/a.test.ts", "t/b.test.ts", "t/empty.test.ts"],
      testSource: "junit+events",
      tests: range(0, per, (i) => (i % 2 ? "t/a.test.ts" : "t/b.test.ts")),
      leftovers: [{ pid: 4242, command: `node leak.js --token ${VARIED_SECRET.value}`, leftGroup: true }],
    }),
    makeShard({
      index: 2,
      status: "timed-out",
      exitCode: null,
      signal: "SIGKILL",
      killedBy: "timeout",
      reason: "killed after 1800 s wall-clock timeout",
      testSource: "events",
      tests: range(per, per, () => "t/a.test.ts"),
    }),
    makeShard({ index: 3, tests: range(2 * per, tests - 4 * per, () => "t/c \x1b[1m<big>&.test.ts") }),
    makeShard({
      index: 4,
      status: "never-started",
      exitCode: null,
      startedAt: null,
      logPath: null,
      durationMs: 0,
      reason: "never started",
      files: ["t/d.test.ts"],
      tests: [],
    }),
    makeShard({
      index: 5,
      status: "crashed",
      exitCode: 0,
      reason: "exited 0 early",
      tests: range(3 * per, 2 * per, () => "t/e.test.ts"),
    }),
  ];
  return makeReport(shards, {
    runId: "20250102T030400Z-abcdef",
    summary: summarize(shards),
    exitCode: 1,
    durationMs: 61_234.567,
    settings: { jobs: 2, timeoutMs: 1_800_000, graceMs: 5000, filesPerShard: 3, bunArgs: ["--retry", "2"] },
    sweeps: { staleRuns: [{ pid: 77, command: "bun test stale", leftGroup: false }], endOfRun: [] },
    preset: { name: "gstack-paid", via: "--preset", tier: "paid", selection: null },
    plan: {
      hash: "0123456789abcdef",
      slices: 2,
      shards: shards.map((s) => ({ index: s.index, slug: s.slug, files: s.files, slice: 1 + (s.index % 2) })),
    },
    slice: { index: 1, count: 2 },
    rerunOf: { runId: "20250101T000000Z-000000", startedAt: "2025-01-01T00:00:00.000Z", files: ["t/a.test.ts"] },
  });
}
