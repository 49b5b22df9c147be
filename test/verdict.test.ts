/**
 * The verdict rules, table-driven over evidence shapes. The end-to-end tests
 * in cli-run.test.ts produce the same evidence from real children; these
 * cover the combinations real children produce only rarely.
 */
import { describe, expect, test } from "bun:test";
import { decideShard, type EventTest, type ProcessFacts, type ShardEvidence } from "../runner/results/verdict.ts";

const ran = (over: Partial<ProcessFacts> = {}): ProcessFacts => ({
  started: true, exitCode: 0, signal: null, killedBy: null, escalated: false, durationMs: 1234, startedAt: "2026-01-01T00:00:00.000Z", ...over,
});
const evTest = (name: string, state: EventTest["state"], status?: EventTest["status"], attempts = state === "found" ? 0 : 1): EventTest => ({
  name, file: "a.test.ts", state, ...(status ? { status } : {}), attempts, durationMs: 5, attemptFailures: [],
});
const evidence = (over: Partial<ShardEvidence>): ShardEvidence => ({
  index: 1, slug: "a", files: ["a.test.ts"], process: ran(), junit: null, events: null, passWithNoTests: false,
  timeoutMs: 3000, graceMs: 1000, logPath: "/logs/a.log", logIncomplete: false, ...over,
});
const passedJUnit = [{ file: "a.test.ts", tests: [{ name: "t", file: "a.test.ts", status: "passed" as const, durationMs: 1, retries: 0, flaky: false, attemptFailures: [], synthetic: false }] }];

describe("nothing shardguard killed is ever passed", () => {
  for (const killedBy of ["timeout", "cancel"] as const) {
    test(`killed by ${killedBy}, even with exit 0 and a complete JUnit`, () => {
      const result = decideShard(evidence({ process: ran({ killedBy, exitCode: 0 }), junit: passedJUnit }));
      expect(result.status).not.toBe("passed");
      expect(result.tests.every((t) => t.status !== "passed")).toBe(true);
    });
  }
  test("a signal we did not send is crashed", () => {
    const result = decideShard(evidence({ process: ran({ exitCode: null, signal: "SIGSEGV" }), junit: passedJUnit }));
    expect(result.status).toBe("crashed");
    expect(result.reason).toContain("SIGSEGV");
  });
});

test("a killed multi-file shard: the hook or file in flight is timed-out, files after it never started", () => {
  const ended: EventTest = { ...evTest("t", "ended", "passed"), file: "a.test.ts", sinceEndMs: 900 };
  const result = decideShard(evidence({
    files: ["a.test.ts", "b.test.ts", "c.test.ts"],
    process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM", durationMs: 1000 }),
    events: { connected: true, looseErrors: [], tests: [ended] },
  }));
  // Every test of a.test.ts ended and nothing else registered: a's afterAll was in flight (issue #8).
  expect(result.tests.map((t) => [t.file, t.name, t.status, t.durationMs])).toEqual([
    ["a.test.ts", "t", "passed", 5],
    ["a.test.ts", "afterAll hook", "timed-out", 900],
    ["b.test.ts", "(whole file)", "never-started", 0],
    ["c.test.ts", "(whole file)", "never-started", 0],
  ]);
  // Nothing registered at all: the first file was loading, for the shard's whole time.
  const loading = decideShard(evidence({
    files: ["a.test.ts", "b.test.ts"],
    process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM", durationMs: 1000 }),
    events: { connected: true, looseErrors: [], tests: [] },
  }));
  expect(loading.tests.map((t) => [t.file, t.status, t.durationMs])).toEqual([
    ["a.test.ts", "timed-out", 1000],
    ["b.test.ts", "timed-out", 0],
  ]);
  const running: EventTest = { ...evTest("t", "running"), file: "a.test.ts" };
  const withRunning = decideShard(evidence({
    files: ["a.test.ts", "b.test.ts"],
    process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM" }),
    events: { connected: true, looseErrors: [], tests: [running] },
  }));
  expect(withRunning.tests.map((t) => t.status)).toEqual(["timed-out", "never-started"]);
});

describe("exit status without Bun's JUnit", () => {
  test("exit 0, no JUnit, no events: crashed, one synthetic entry per file", () => {
    const result = decideShard(evidence({ files: ["a.test.ts", "b.test.ts"] }));
    expect(result.status).toBe("crashed");
    expect(result.tests.map((t) => [t.file, t.synthetic])).toEqual([["a.test.ts", true], ["b.test.ts", true]]);
    expect(result.tests[0]!.failure?.message).toContain("per-test data is missing");
  });
  test("exit 0, events connected, tests started: crashed with the in-flight test crashed", () => {
    const events = { connected: true, looseErrors: [], tests: [evTest("one", "ended", "passed"), evTest("two", "running"), evTest("three", "found")] };
    const result = decideShard(evidence({ events }));
    expect(result.status).toBe("crashed");
    expect(result.tests.map((t) => t.status)).toEqual(["passed", "crashed", "never-started"]);
  });
  test("exit 0, nothing found, and the preload's end mark: no tests found (failed), or passed with --pass-with-no-tests", () => {
    const events = { connected: true, looseErrors: [], tests: [] };
    expect(decideShard(evidence({ events, testsStarted: 0, finishedNormally: true })).status).toBe("failed");
    expect(decideShard(evidence({ events, testsStarted: 0, finishedNormally: true, passWithNoTests: true })).status).toBe("passed");
  });
  test("exit 0, nothing found, no end mark: crashed even with --pass-with-no-tests (process.exit(0) before any test)", () => {
    const events = { connected: true, looseErrors: [], tests: [] };
    const result = decideShard(evidence({ events, testsStarted: 0, finishedNormally: false, passWithNoTests: true }));
    expect(result.status).toBe("crashed");
    expect(result.tests.every((t) => t.status === "crashed")).toBe(true);
  });
  test("exit 0 with events lost but the preload's marks showing a test start: crashed, not 'no tests'", () => {
    const events = { connected: true, looseErrors: [], tests: [] };
    const result = decideShard(evidence({ events, testsStarted: 2, finishedNormally: false }));
    expect(result.status).toBe("crashed");
  });
  test("exit 1 with nothing registered: failed with the load error's message", () => {
    const events = { connected: true, tests: [], looseErrors: [{ file: "a.test.ts", message: "boom", type: "Error" }] };
    const result = decideShard(evidence({ process: ran({ exitCode: 1 }), events }));
    expect(result.status).toBe("failed");
    expect(result.tests[0]!.failure).toMatchObject({ type: "load-error", message: "boom" });
  });
  test("an unusual exit code is crashed", () => {
    expect(decideShard(evidence({ process: ran({ exitCode: 3 }) })).status).toBe("crashed");
  });
});

describe("with Bun's JUnit", () => {
  test("exit 0 and every file listed: passed", () => {
    expect(decideShard(evidence({ junit: passedJUnit })).status).toBe("passed");
  });
  test("a planned file missing from the JUnit is never silently passed", () => {
    const result = decideShard(evidence({ files: ["a.test.ts", "b.test.ts"], junit: passedJUnit }));
    expect(result.status).toBe("failed");
    expect(result.tests.find((t) => t.file === "b.test.ts")!.failure?.message).toBe("no tests found");
  });
  test("exit 1 with all tests passing still shows a failing testcase", () => {
    const result = decideShard(evidence({ process: ran({ exitCode: 1 }), junit: passedJUnit }));
    expect(result.status).toBe("failed");
    expect(result.tests.some((t) => t.status === "failed")).toBe(true);
  });
  test("events mark a retried pass as flaky", () => {
    const flaky: EventTest = { ...evTest("t", "ended", "passed", 2), attemptFailures: [{ type: "Error", message: "429" }] };
    const result = decideShard(evidence({ junit: passedJUnit, events: { connected: true, looseErrors: [], tests: [flaky] } }));
    expect(result.tests[0]).toMatchObject({ status: "passed", flaky: true, retries: 1 });
    expect(result.testSource).toBe("junit+events");
  });
});

test("a shard that never started lists every file as never-started with the reason", () => {
  const result = decideShard(evidence({ files: ["a.test.ts", "b.test.ts"], process: { ...ran(), started: false, notStartedReason: "run cancelled (SIGTERM) before this shard started" } }));
  expect(result.status).toBe("never-started");
  expect(result.durationMs).toBe(0);
  expect(result.tests.map((t) => t.status)).toEqual(["never-started", "never-started"]);
  expect(result.tests[0]!.failure?.message).toContain("SIGTERM");
});
