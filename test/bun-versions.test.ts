/**
 * What differs between the supported Bun versions (docs/bun-behaviour.md,
 * "Per Bun version"): the capability table, the refusal of a Bun outside
 * the range, and the verdict over Bun 1.3.x's JUnit (each attempt of a
 * retried test a testcase of its own, failures without a message), shaped
 * as Bun 1.3.13 writes it; then the example suite on a real Bun 1.3.13.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, cpSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { bunCapabilities, missingFeatures, unsupportedBun } from "../runner/results/bun-capabilities.ts";
import { decideShard, type EventTest, type ShardEvidence } from "../runner/results/verdict.ts";
import { NO_MESSAGE } from "../runner/results/from-junit.ts";
import type { TestResult } from "../runner/results/report-model.ts";
import { makeSuite, readReport, REPO, removeSuites, runCli, survivors, waitFor } from "./helpers/cli.ts";
import { retryCount, shardArgv } from "../runner/exec/bun-command.ts";
import { bunBinary, SUPPORTED_BUNS } from "./helpers/bun-versions.ts";

afterAll(removeSuites);

describe("capabilities by version", () => {
  test.each([
    [
      "1.3.3",
      {
        junitListsAttempts: true,
        junitFailureText: false,
        noOrphans: false,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: false,
        retryFlag: false,
        junitUnderBail: false,
      },
    ],
    [
      "1.3.10",
      {
        junitListsAttempts: true,
        junitFailureText: false,
        noOrphans: false,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: false,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    [
      "1.3.13",
      {
        junitListsAttempts: true,
        junitFailureText: false,
        noOrphans: false,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    [
      "1.3.14",
      {
        junitListsAttempts: true,
        junitFailureText: false,
        noOrphans: true,
        newerThanMeasured: false,
        isolateWithEvents: false,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    [
      "1.4.0",
      {
        junitListsAttempts: false,
        junitFailureText: true,
        noOrphans: true,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    [
      "1.4.4",
      {
        junitListsAttempts: false,
        junitFailureText: true,
        noOrphans: true,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    [
      "1.4.5",
      {
        junitListsAttempts: false,
        junitFailureText: true,
        noOrphans: true,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    [
      "1.5.0",
      {
        junitListsAttempts: false,
        junitFailureText: true,
        noOrphans: true,
        newerThanMeasured: true,
        isolateWithEvents: true,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
    // A canary is read as its base version.
    [
      "1.4.2-canary.20260906.1",
      {
        junitListsAttempts: false,
        junitFailureText: true,
        noOrphans: true,
        newerThanMeasured: false,
        isolateWithEvents: true,
        isolateFlag: true,
        retryFlag: true,
        junitUnderBail: true,
      },
    ],
  ])("Bun %s", (version, want) => {
    expect(bunCapabilities(version)).toEqual({ version, ...want });
  });

  test("the range: 1.3.0 and later; older or unreadable versions are refused with one sentence", () => {
    expect(unsupportedBun("1.3.0")).toBeNull();
    expect(unsupportedBun("1.3.3")).toBeNull();
    expect(unsupportedBun("1.3.13")).toBeNull();
    expect(unsupportedBun("1.4.5")).toBeNull();
    expect(unsupportedBun("1.2.23")).toBe("Bun 1.2.23 is older than 1.3.0, the oldest supported");
    expect(unsupportedBun("banana")).toBe("Bun banana is not a version shardguard can read");
  });

  test("what a Bun lacks is said once, naming the version and what the run does instead", () => {
    expect(missingFeatures(bunCapabilities("1.4.4"), true)).toEqual([]);
    expect(missingFeatures(bunCapabilities("1.4.5"), false)).toEqual([]);
    expect(missingFeatures(bunCapabilities("1.3.13"), true)).toEqual([
      "Bun 1.3.13 has no --no-orphans: a shard child does not exit by itself " +
        "if the runner is killed with SIGKILL; the run's guardian ends it instead",
      "Bun 1.3.13's JUnit has no failure messages: they are taken from the inspector events",
    ]);
    expect(missingFeatures(bunCapabilities("1.3.14"), false)).toEqual([
      "Bun 1.3.14's JUnit has no failure messages and test events are off: failures are reported without one",
    ]);
    expect(missingFeatures(bunCapabilities("1.5.0"), true)).toEqual([
      "Bun 1.5.0 is newer than 1.4.5, the newest measured: it is read as 1.4.5 is",
    ]);
  });
});

// Bun 1.3.13's JUnit testcases: every failure is `<failure type="AssertionError" />`.
const bare = (name: string, status: TestResult["status"], line: number): TestResult => ({
  name,
  file: "a.test.ts",
  line,
  status,
  durationMs: 1,
  retries: 0,
  flaky: false,
  attemptFailures: [],
  synthetic: false,
  ...(status === "failed" ? { failure: { type: "failure", errorName: "AssertionError", message: "" } } : {}),
});
const ev = (
  name: string,
  status: EventTest["status"],
  attempts: number,
  line: number,
  failures: string[] = [],
): EventTest => ({
  name,
  file: "a.test.ts",
  line,
  state: "ended",
  status,
  attempts,
  durationMs: 1,
  attemptFailures: failures.map((message) => ({ type: "failure", errorName: "Error", message })),
  ...(status === "failed" ? { failure: { type: "failure", errorName: "Error", message: "final boom" } } : {}),
});
const shard = (tests: TestResult[], over: Partial<ShardEvidence>): ShardEvidence => ({
  index: 1,
  slug: "a",
  files: ["a.test.ts"],
  junit: [{ file: "a.test.ts", tests }],
  events: null,
  passWithNoTests: false,
  process: {
    started: true,
    exitCode: 0,
    signal: null,
    killedBy: null,
    escalated: false,
    durationMs: 100,
    startedAt: "2026-01-01T00:00:00.000Z",
  },
  timeoutMs: 3000,
  graceMs: 1000,
  logPath: "/logs/a.log",
  logIncomplete: false,
  finishedNormally: true,
  ...over,
});
const rows = (r: ReturnType<typeof decideShard>) => r.tests.map((t) => [t.name, t.status, t.retries, t.flaky]);

describe("Bun 1.3.x's JUnit: one test, one entry", () => {
  // flaky fails once then passes; bad fails both attempts (--retry 1); ok passes.
  const junit = () => [
    bare("flaky", "failed", 1),
    bare("flaky", "passed", 1),
    bare("bad", "failed", 2),
    bare("bad", "failed", 2),
    bare("ok", "passed", 3),
  ];
  const events = () => ({
    connected: true,
    looseErrors: [],
    tests: [
      ev("flaky", "passed", 2, 1, ["first boom"]),
      ev("bad", "failed", 2, 2, ["bad boom"]),
      ev("ok", "passed", 1, 3),
    ],
  });

  test("with events: the events' start counts fold the attempts; messages come from the events", () => {
    const r = decideShard(
      shard(junit(), {
        junitAttempts: { maxAttempts: 2 },
        events: events(),
        testsStarted: 5,
        process: { ...shard([], {}).process, exitCode: 1 },
      }),
    );
    expect(rows(r)).toEqual([
      ["flaky", "passed", 1, true],
      ["bad", "failed", 1, false],
      ["ok", "passed", 0, false],
    ]);
    expect(r.status).toBe("failed");
    expect(r.reason).toBe("1 test failed");
    expect(r.tests[0]!.attemptFailures).toEqual([{ type: "failure", errorName: "Error", message: "first boom" }]);
    expect(r.tests[1]!.failure?.message).toBe("final boom");
  });

  test("without events, from --retry's count: the same entries; a flaky test keeps its retry from Bun's JUnit", () => {
    const r = decideShard(
      shard(junit(), { junitAttempts: { maxAttempts: 2 }, process: { ...shard([], {}).process, exitCode: 1 } }),
    );
    expect(rows(r)).toEqual([
      ["flaky", "passed", 1, true],
      ["bad", "failed", 1, false],
      ["ok", "passed", 0, false],
    ]);
    expect(r.tests[0]!.attemptFailures).toEqual([
      { type: "failure", errorName: "AssertionError", message: "attempt failed (Bun's JUnit gives no message)" },
    ]);
    // No message anywhere: the entry says so rather than being empty.
    expect(r.tests[1]!.failure).toEqual({ type: "failure", errorName: "AssertionError", message: NO_MESSAGE });
  });

  test("without events or a retry count, exit 0 proves each failed testcase was followed by its retry", () => {
    const r = decideShard(
      shard([bare("flaky", "failed", 1), bare("flaky", "failed", 1), bare("flaky", "passed", 1)], {
        junitAttempts: { maxAttempts: null },
      }),
    );
    expect(rows(r)).toEqual([["flaky", "passed", 2, true]]);
    expect(r.status).toBe("passed");
  });

  test("an each-table's rows of one name are separate tests: the count bounds a fold, nothing else is merged", () => {
    // test.each([1, 2])("same") with --retry 1: row 1 fails twice, row 2 passes.
    const r = decideShard(
      shard([bare("same", "failed", 4), bare("same", "failed", 4), bare("same", "passed", 4)], {
        junitAttempts: { maxAttempts: 2 },
        process: { ...shard([], {}).process, exitCode: 1 },
      }),
    );
    expect(rows(r)).toEqual([
      ["same", "failed", 1, false],
      ["same", "passed", 0, false],
    ]);
    // No count and exit 1: nothing is folded, and the failure stays a failure.
    const unknown = decideShard(
      shard([bare("same", "failed", 4), bare("same", "passed", 4)], {
        junitAttempts: { maxAttempts: null },
        process: { ...shard([], {}).process, exitCode: 1 },
      }),
    );
    expect(rows(unknown)).toEqual([
      ["same", "failed", 0, false],
      ["same", "passed", 0, false],
    ]);
    expect(unknown.status).toBe("failed");
  });

  test("a failed hook without a message gets the file's error outside tests when their counts agree", () => {
    const hook = {
      name: "(unnamed)",
      file: "a.test.ts",
      status: "failed" as const,
      durationMs: 0,
      retries: 0,
      flaky: false,
      attemptFailures: [],
      synthetic: false,
      failure: { type: "failure" as const, errorName: "AssertionError", message: "" },
    };
    const r = decideShard(
      shard([hook], {
        events: {
          connected: true,
          looseErrors: [{ file: "a.test.ts", type: "Error", message: "setup failed" }],
          tests: [{ ...ev("t", "passed", 0, 2), state: "found" }],
        },
        process: { ...shard([], {}).process, exitCode: 1 },
      }),
    );
    expect(r.tests.map((t) => [t.name, t.status, t.failure?.message])).toEqual([
      ["(unnamed)", "failed", "setup failed"],
      ["t", "never-started", "its beforeAll hook failed: setup failed"],
    ]);
  });
});

describe("Bun outside the range", () => {
  test("a Bun older than 1.3.0 is refused: exit 2, one line, no child started", async () => {
    const dir = makeSuite({ "a.test.ts": `import { test } from "bun:test";\ntest("x", () => {});\n` }, "sg-oldbun-");
    const fake = path.join(dir, "old-bun");
    writeFileSync(fake, "#!/bin/sh\necho 1.2.23\n");
    chmodSync(fake, 0o755);
    const r = await runCli(["run", "--root", dir, "--bun", fake]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `shardguard: invalid --bun ${JSON.stringify(fake)}: Bun 1.2.23 is ` +
        `older than 1.3.0, the oldest supported (supported: 1.3.0 and later)`,
    );
  });
});

describe("on a real Bun 1.3.13: the example suite with --retry 1 (what gstack's test:gate passes)", () => {
  test("the flaky test is one testcase, flaky, its file passed; the always-failing one is listed once", async () => {
    const bun = await bunBinary("1.3.13");
    const dir = makeSuite({}, "sg-ex1313-");
    cpSync(path.join(REPO, "examples", "paid-suite"), dir, { recursive: true });
    const r = await runCli(
      [
        "run",
        "--root",
        dir,
        "--bun",
        bun,
        "--jobs",
        "2",
        "--timeout",
        "20",
        "test/agent-flaky.test.ts",
        "test/agent-wrong-answer.test.ts",
        "--",
        "--retry",
        "1",
      ],
      { limitMs: 60_000 },
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("shardguard: note: Bun 1.3.13 has no --no-orphans");
    expect(r.stdout.match(/shardguard: note:/g)).toHaveLength(1);
    const report = readReport(dir);
    expect(report.bun.missing).toHaveLength(2);
    const file = (f: string) => report.shards.find((s) => s.files.includes(f))!;
    expect(file("test/agent-flaky.test.ts").status).toBe("passed");
    expect(file("test/agent-flaky.test.ts").tests.map((t) => [t.name, t.status, t.retries, t.flaky])).toEqual([
      ["agent answers once the rate limit has cleared", "passed", 1, true],
      ["agent answers a second question", "passed", 0, false],
    ]);
    const wrong = file("test/agent-wrong-answer.test.ts");
    expect(wrong.tests.map((t) => [t.name, t.status, t.retries])).toEqual([
      ["agent names the capital of France", "passed", 0],
      ["agent names the capital of Australia", "failed", 1],
    ]);
    expect(wrong.tests[1]!.failure?.message).toContain('Expected: "Canberra"');
  }, 90_000);
});

describe("the child's command line by capability", () => {
  const inputs = {
    bun: "/b/bun",
    root: "/r",
    files: ["a.test.ts"],
    junitPath: "/j.xml",
    socketPath: null,
    bunArgs: ["--retry", "1"],
  };
  test("--no-orphans only where the Bun has it (not 1.3.13)", () => {
    expect(shardArgv(inputs).slice(0, 3)).toEqual(["/b/bun", "--no-orphans", "test"]);
    expect(shardArgv({ ...inputs, noOrphans: false }).slice(0, 2)).toEqual(["/b/bun", "test"]);
  });
  test(
    "the retry count of the user's flags: --retry N, " + "--retry=N, the last one wins; none or unreadable is null",
    () => {
      expect(retryCount(["--retry", "2"])).toBe(2);
      expect(retryCount(["--retry=1", "--bail"])).toBe(1);
      expect(retryCount(["--retry=1", "--retry", "3"])).toBe(3);
      expect(retryCount(["--bail"])).toBeNull();
      expect(retryCount(["--retry=x"])).toBeNull();
    },
  );
});

test("on a real Bun 1.3.13 (no --no-orphans): kill -9 of the " +
  "runner, and the run's guardian ends the shard child within 3 s", async () => {
  const bun = await bunBinary("1.3.13");
  const dir = makeSuite(
    { "spin.test.ts": 'import { test } from "bun:test";\ntest("spin", () => { while (true) {} });\n' },
    "sg-kill1313-",
  );
  let killedAt = 0;
  const run = await runCli(["run", "--root", dir, "--bun", bun, "--timeout", "60"], {
    onLine: {
      match: /START spin\.test\.ts/,
      act: (pid) =>
        setTimeout(() => {
          killedAt = performance.now();
          process.kill(pid, "SIGKILL");
        }, 800),
    },
    limitMs: 30_000,
  });
  expect(run.signal).toBe("SIGKILL");
  const report = readReport(dir);
  expect(report.bun.version).toBe("1.3.13");
  const clean = await waitFor(
    () => survivors(report.runId).length === 0,
    Math.max(0, 3_000 - (performance.now() - killedAt)),
  );
  expect(clean).toBe(true);
}, 40_000);

test("every supported Bun has its differential table file, and no other Bun has one", () => {
  const files = readdirSync(path.join(REPO, "test")).filter((f) => /^differential-.*\.test\.ts$/.test(f));
  expect(files.sort()).toEqual(SUPPORTED_BUNS.map((v) => `differential-${v}.test.ts`).sort());
});
