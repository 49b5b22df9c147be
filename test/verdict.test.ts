/**
 * The verdict rules, table-driven over evidence shapes. The end-to-end tests
 * in cli-run.test.ts produce the same evidence from real children; these
 * cover the combinations real children produce only rarely.
 */
import { describe, expect, test } from "bun:test";
import {
  decideShard,
  neverStarted,
  skippedByDiff,
  supervisionFailed,
  type EventTest,
  type ProcessFacts,
  type ShardEvidence,
} from "../runner/results/verdict.ts";

const ran = (over: Partial<ProcessFacts> = {}): ProcessFacts => ({
  started: true,
  exitCode: 0,
  signal: null,
  killedBy: null,
  escalated: false,
  durationMs: 1234,
  startedAt: "2026-01-01T00:00:00.000Z",
  ...over,
});
const evTest = (
  name: string,
  state: EventTest["state"],
  status?: EventTest["status"],
  attempts = state === "found" ? 0 : 1,
): EventTest => ({
  name,
  file: "a.test.ts",
  state,
  ...(status ? { status } : {}),
  attempts,
  durationMs: 5,
  attemptFailures: [],
});
const evidence = (over: Partial<ShardEvidence>): ShardEvidence => ({
  index: 1,
  slug: "a",
  files: ["a.test.ts"],
  process: ran(),
  junit: null,
  events: null,
  passWithNoTests: false,
  timeoutMs: 3000,
  graceMs: 1000,
  logPath: "/logs/a.log",
  logIncomplete: false,
  ...over,
});
const passedJUnit = [
  {
    file: "a.test.ts",
    tests: [
      {
        name: "t",
        file: "a.test.ts",
        status: "passed" as const,
        durationMs: 1,
        retries: 0,
        flaky: false,
        attemptFailures: [],
        synthetic: false,
      },
    ],
  },
];

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
  const result = decideShard(
    evidence({
      files: ["a.test.ts", "b.test.ts", "c.test.ts"],
      process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM", durationMs: 1000 }),
      events: { connected: true, looseErrors: [], tests: [ended] },
    }),
  );
  // Every test of a.test.ts ended and nothing else registered: a's afterAll was in flight (docs/reports.md).
  expect(result.tests.map((t) => [t.file, t.name, t.status, t.durationMs])).toEqual([
    ["a.test.ts", "t", "passed", 5],
    ["a.test.ts", "afterAll hook", "timed-out", 900],
    ["b.test.ts", "(whole file)", "never-started", 0],
    ["c.test.ts", "(whole file)", "never-started", 0],
  ]);
  // Nothing registered at all: the first file was loading, for the shard's whole time.
  const loading = decideShard(
    evidence({
      files: ["a.test.ts", "b.test.ts"],
      process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM", durationMs: 1000 }),
      events: { connected: true, looseErrors: [], tests: [] },
    }),
  );
  expect(loading.tests.map((t) => [t.file, t.status, t.durationMs])).toEqual([
    ["a.test.ts", "timed-out", 1000],
    ["b.test.ts", "timed-out", 0],
  ]);
  const running: EventTest = { ...evTest("t", "running"), file: "a.test.ts" };
  const withRunning = decideShard(
    evidence({
      files: ["a.test.ts", "b.test.ts"],
      process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM" }),
      events: { connected: true, looseErrors: [], tests: [running] },
    }),
  );
  expect(withRunning.tests.map((t) => t.status)).toEqual(["timed-out", "never-started"]);
});

test("a killed shard of a million tests is decided: the time in flight is the least since a test ended (no spread " +
  "of a million arguments)", () => {
  // Math.min(...ends) overflowed the stack at about 700,000 ended tests (Bun 1.4.4).
  const tests: EventTest[] = [];
  for (let i = 0; i < 1_000_000; i++) tests.push({ ...evTest(`t${i}`, "ended", "passed"), sinceEndMs: 2_000_000 - i });
  const result = decideShard(
    evidence({
      files: ["a.test.ts", "b.test.ts"],
      process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM", durationMs: 5_000_000 }),
      events: { connected: true, looseErrors: [], tests },
    }),
  );
  expect(result.status).toBe("timed-out");
  expect(result.tests).toHaveLength(1_000_002);
  expect(result.tests.slice(-2).map((t) => [t.file, t.name, t.status, t.durationMs])).toEqual([
    ["a.test.ts", "afterAll hook", "timed-out", 1_000_001],
    ["b.test.ts", "(whole file)", "never-started", 0],
  ]);
}, 20_000);

describe("exit status without Bun's JUnit", () => {
  test("exit 0, no JUnit, no events: crashed, one synthetic entry per file", () => {
    const result = decideShard(evidence({ files: ["a.test.ts", "b.test.ts"] }));
    expect(result.status).toBe("crashed");
    expect(result.tests.map((t) => [t.file, t.synthetic])).toEqual([
      ["a.test.ts", true],
      ["b.test.ts", true],
    ]);
    expect(result.tests[0]!.failure?.message).toContain("per-test data is missing");
  });
  test("exit 0, events connected, tests started: crashed with the in-flight test crashed", () => {
    const events = {
      connected: true,
      looseErrors: [],
      tests: [evTest("one", "ended", "passed"), evTest("two", "running"), evTest("three", "found")],
    };
    const result = decideShard(evidence({ events }));
    expect(result.status).toBe("crashed");
    expect(result.tests.map((t) => t.status)).toEqual(["passed", "crashed", "never-started"]);
  });
  test("exit 0, nothing found, the preload's end mark: an empty file (passed); failed under empty-files fail", () => {
    const events = { connected: true, looseErrors: [], tests: [] };
    const empty = decideShard(evidence({ events, testsStarted: 0, finishedNormally: true }));
    expect([empty.status, empty.reason]).toEqual(["passed", "passed; no tests in a.test.ts (an empty file)"]);
    expect(empty.tests.map((t) => [t.name, t.status, t.failure])).toEqual([
      ["(whole file)", "skipped", { type: "no-tests", message: "registers no tests: an empty file" }],
    ]);
    const strict = decideShard(evidence({ events, testsStarted: 0, finishedNormally: true, emptyFiles: "fail" }));
    // The hint names shardguard's setting: Bun's --pass-with-no-tests changes nothing for a file of a run.
    expect([strict.status, strict.reason]).toEqual([
      "failed",
      'no tests found in a.test.ts (empty-files = "fail"; --empty-files pass allows it)',
    ]);
    expect(strict.tests.map((t) => [t.status, t.failure?.type])).toEqual([["failed", "no-tests"]]);
    // Under the strict setting --pass-with-no-tests still lets it pass, as before the setting.
    expect(
      decideShard(
        evidence({ events, testsStarted: 0, finishedNormally: true, emptyFiles: "fail", passWithNoTests: true }),
      ).status,
    ).toBe("passed");
  });
  test(
    "exit 0, nothing found, no end mark: crashed even with " + "--pass-with-no-tests (process.exit(0) before any test)",
    () => {
      const events = { connected: true, looseErrors: [], tests: [] };
      const result = decideShard(evidence({ events, testsStarted: 0, finishedNormally: false, passWithNoTests: true }));
      expect(result.status).toBe("crashed");
      expect(result.tests.every((t) => t.status === "crashed")).toBe(true);
    },
  );
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
  test("a file missing from the JUnit of a run that exited 0 is an empty file; failed under empty-files fail", () => {
    const result = decideShard(evidence({ files: ["a.test.ts", "b.test.ts"], junit: passedJUnit }));
    expect([result.status, result.reason]).toEqual([
      "passed",
      "all tests passed; no tests in b.test.ts (an empty file)",
    ]);
    expect(result.tests.find((t) => t.file === "b.test.ts")).toMatchObject({
      status: "skipped",
      synthetic: true,
      failure: { type: "no-tests" },
    });
    const strict = decideShard(evidence({ files: ["a.test.ts", "b.test.ts"], junit: passedJUnit, emptyFiles: "fail" }));
    expect([strict.status, strict.reason]).toEqual([
      "failed",
      'no tests found in b.test.ts (empty-files = "fail"; --empty-files pass allows it)',
    ]);
    expect(strict.tests.find((t) => t.file === "b.test.ts")!.status).toBe("failed");
  });
  // Empty, or a load error Bun sent no event for: never passed on that doubt.
  test("exit 1 explained by a failed test: a file missing from the JUnit stays failed", () => {
    const failed = [{ file: "a.test.ts", tests: [{ ...passedJUnit[0]!.tests[0]!, status: "failed" as const }] }];
    const result = decideShard(
      evidence({ files: ["a.test.ts", "b.test.ts"], junit: failed, process: ran({ exitCode: 1 }) }),
    );
    expect(result.tests.find((t) => t.file === "b.test.ts")).toMatchObject({
      status: "failed",
      failure: { type: "no-tests" },
    });
  });
  test("exit 1 with all tests passing still shows a failing testcase", () => {
    const result = decideShard(evidence({ process: ran({ exitCode: 1 }), junit: passedJUnit }));
    expect(result.status).toBe("failed");
    expect(result.tests.some((t) => t.status === "failed")).toBe(true);
  });
  test("events mark a retried pass as flaky", () => {
    const flaky: EventTest = {
      ...evTest("t", "ended", "passed", 2),
      attemptFailures: [{ type: "failure", errorName: "Error", message: "429" }],
    };
    const result = decideShard(
      evidence({ junit: passedJUnit, events: { connected: true, looseErrors: [], tests: [flaky] } }),
    );
    expect(result.tests[0]).toMatchObject({ status: "passed", flaky: true, retries: 1 });
    expect(result.testSource).toBe("junit+events");
  });
});

test("each JUnit testcase takes the first event test left under its name, in any order, repeats in order", () => {
  const failed = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      type: "failure" as const,
      errorName: "Error",
      message: `attempt ${i + 1}`,
    }));
  const x1: EventTest = { ...evTest("x", "ended", "passed", 1) };
  const y: EventTest = { ...evTest("y", "ended", "passed", 2), attemptFailures: failed(1) };
  const x2: EventTest = { ...evTest("x", "ended", "passed", 3), attemptFailures: failed(2) };
  const z: EventTest = { ...evTest("z", "ended", "passed", 2), attemptFailures: failed(1) };
  const junit = (...order: string[]) => bunFile(...order.map((name, i) => bunCase(name, "passed", i + 1)));
  const enrichment = (r: ReturnType<typeof decideShard>) => r.tests.map((t) => [t.name, t.retries, t.flaky]);
  // In event order; out of order from the first testcase; out of order later (the index by name built midway).
  for (const order of [
    ["x", "y", "x", "z"],
    ["y", "x", "z", "x"],
    ["x", "z", "y", "x"],
  ]) {
    const result = decideShard(evidence({ junit: junit(...order), events: connected(x1, y, x2, z) }));
    const expected = {
      x: [
        [0, false],
        [2, true],
      ],
      y: [[1, true]],
      z: [[1, true]],
    } as Record<string, [number, boolean][]>;
    const seen: Record<string, number> = {};
    expect(enrichment(result)).toEqual(
      order.map((name) => [name, ...expected[name]![(seen[name] = (seen[name] ?? -1) + 1)]!]),
    );
  }
});

test("a shard that never started lists every file as never-started with the reason", () => {
  const result = decideShard(
    evidence({
      files: ["a.test.ts", "b.test.ts"],
      process: { ...ran(), started: false, notStartedReason: "run cancelled (SIGTERM) before this shard started" },
    }),
  );
  expect(result.status).toBe("never-started");
  expect(result.durationMs).toBe(0);
  expect(result.tests.map((t) => t.status)).toEqual(["never-started", "never-started"]);
  expect(result.tests[0]!.failure?.message).toContain("SIGTERM");
});

/** A Bun JUnit testcase (hooks have no line, as Bun 1.4.4 writes them). */
const bunCase = (name: string, status: "passed" | "failed" | "skipped" | "todo", line?: number) => ({
  name,
  file: "a.test.ts",
  status,
  durationMs: 1,
  retries: 0,
  flaky: false,
  attemptFailures: [],
  synthetic: false,
  ...(line !== undefined ? { line } : {}),
  ...(status === "failed"
    ? { failure: { type: "failure" as const, errorName: "Error", message: `${name} boom` } }
    : {}),
});
const bunFile = (...tests: ReturnType<typeof bunCase>[]) => [{ file: "a.test.ts", tests }];
const connected = (...tests: EventTest[]) => ({ connected: true, looseErrors: [], tests });
const names = (r: ReturnType<typeof decideShard>) => r.tests.map((t) => [t.name, t.status]);

describe("Bun's JUnit is trusted only when the rest of the evidence agrees (docs/reports.md)", () => {
  test("no end-of-run mark: crashed, whatever the JUnit says", () => {
    const result = decideShard(evidence({ junit: passedJUnit, finishedNormally: false, testsStarted: 1 }));
    expect(result.status).toBe("crashed");
    expect(result.reason).toContain(
      "exited 0 before finishing (Bun's JUnit report was not trusted: the child preload's end-of-run mark is missing)",
    );
    expect(result.tests.map((t) => t.status)).toEqual(["crashed"]);
  });
  test(
    "end mark present, JUnit unusable for another reason than the read limit (malformed): crashed, and the " +
      "reason does not claim the run ended early",
    () => {
      const events = connected(evTest("one", "ended", "passed"), evTest("two", "ended", "passed"));
      const junitProblem = "Bun's JUnit report is unreadable: malformed JUnit XML at line 3, column 1: unexpected end";
      const result = decideShard(evidence({ junitProblem, finishedNormally: true, testsStarted: 2, events }));
      expect(result.status).toBe("crashed");
      expect(result.reason).toContain(`exited 0 after reaching the end of the run, but ${junitProblem}`);
      expect(result.reason).not.toContain("process.exit");
      // One entry carries the shard's status into every report; no hook was in flight (Bun reached the end).
      expect(names(result)).toEqual([
        ["one", "passed"],
        ["two", "passed"],
        ["(Bun's JUnit report)", "crashed"],
      ]);
    },
  );
  test("more tests listed as run than the preload counted starts: crashed", () => {
    const junit = bunFile(bunCase("one", "passed", 1), bunCase("two", "passed", 2));
    const result = decideShard(evidence({ junit, finishedNormally: true, testsStarted: 1 }));
    expect(result.status).toBe("crashed");
    expect(result.reason).toContain("lists 2 tests that ran, the child preload counted 1");
  });
  test("a forgery caught by the marks: the test in flight is crashed, the other never-started", () => {
    const junit = bunFile(bunCase("one", "passed", 1), bunCase("two", "passed", 2));
    const events = connected(evTest("one", "running"), evTest("two", "found"));
    const result = decideShard(evidence({ junit, finishedNormally: false, testsStarted: 1, events }));
    expect(result.status).toBe("crashed");
    expect(names(result)).toEqual([
      ["one", "crashed"],
      ["two", "never-started"],
    ]);
  });
  test(
    "a lost tail of events is no disagreement (measured under load: the last end, or a start, lost in a " +
      "finished run)",
    () => {
      const junit = bunFile(bunCase("one", "passed", 1), bunCase("two", "passed", 2));
      const events = connected(evTest("one", "running"), evTest("two", "found"));
      const result = decideShard(evidence({ junit, finishedNormally: true, testsStarted: 2, events }));
      expect(result.status).toBe("passed");
      expect(names(result)).toEqual([
        ["one", "passed"],
        ["two", "passed"],
      ]);
    },
  );
  test("--bail after a failure skips the end mark: the JUnit stays trusted, unreached tests never-started", () => {
    const junit = bunFile(bunCase("ok", "passed", 1), bunCase("bad", "failed", 2));
    const events = connected(evTest("ok", "ended", "passed"), evTest("bad", "running"), evTest("unreached", "found"));
    const result = decideShard(
      evidence({
        junit,
        finishedNormally: false,
        testsStarted: 2,
        bail: true,
        process: ran({ exitCode: 1 }),
        events,
        files: ["a.test.ts", "b.test.ts"],
      }),
    );
    expect(result.status).toBe("failed");
    expect(result.reason).toBe("1 test failed; --bail stopped the run");
    expect(result.tests.map((t) => [t.file, t.name, t.status])).toEqual([
      ["a.test.ts", "ok", "passed"],
      ["a.test.ts", "bad", "failed"],
      ["a.test.ts", "unreached", "never-started"],
      ["b.test.ts", "(whole file)", "never-started"],
    ]);
  });
});

test("--bail: a concurrent test still running when a sibling failed is crashed, and says --bail stopped it", () => {
  const junit = bunFile(bunCase("bad", "failed", 2));
  const events = connected(evTest("slow", "running"), evTest("bad", "ended", "failed"));
  const result = decideShard(
    evidence({ junit, finishedNormally: false, testsStarted: 2, bail: true, process: ran({ exitCode: 1 }), events }),
  );
  expect(result.status).toBe("failed");
  const slow = result.tests.find((t) => t.name === "slow")!;
  expect(slow.status).toBe("crashed");
  expect(slow.failure?.message).toBe("stopped while running: --bail ended the run after a failure");
});

describe("hooks, .only and the found plan (docs/reports.md)", () => {
  test("passing and skipped hooks are dropped; failing ones keep Bun's name (the failed count is Bun's)", () => {
    const junit = bunFile(
      bunCase("off > (unnamed)", "skipped"),
      bunCase("off > real", "skipped", 3),
      bunCase("off > (unnamed)", "skipped"),
      bunCase("ba > (unnamed)", "failed"),
      bunCase("aa > z", "passed", 9),
      bunCase("aa > (unnamed)", "failed"),
      bunCase("(unnamed)", "failed"),
    );
    const result = decideShard(evidence({ junit, process: ran({ exitCode: 1 }) }));
    expect(names(result)).toEqual([
      ["off > real", "skipped"],
      ["ba > (unnamed)", "failed"],
      ["aa > z", "passed"],
      ["aa > (unnamed)", "failed"],
      ["(unnamed)", "failed"],
    ]);
  });
  test("tests under a failed beforeAll never started (its error named); .only leaves the others skipped", () => {
    const junit = bunFile(bunCase("top", "passed", 1), bunCase("ba > (unnamed)", "failed"));
    const events = connected(
      evTest("top", "ended", "passed"),
      evTest("ba > x", "found"),
      evTest("ba > in > y", "found"),
      evTest("other", "found"),
    );
    const result = decideShard(
      evidence({ junit, process: ran({ exitCode: 1 }), events, testsStarted: 1, finishedNormally: true }),
    );
    expect(names(result)).toEqual([
      ["top", "passed"],
      ["ba > (unnamed)", "failed"],
      ["ba > x", "never-started"],
      ["ba > in > y", "never-started"],
      ["other", "skipped"],
    ]);
    expect(result.tests[2]!.failure).toEqual({
      type: "never-started",
      message: "its beforeAll hook failed: ba > (unnamed) boom",
    });
    expect(result.tests.filter((t) => t.status === "failed").length).toBe(1);
    expect(result.reason).toBe("1 test failed; 2 tests never started (a beforeAll hook failed)");
  });
  test("a shard whose tests were all skipped, or all todo, says so", () => {
    expect(
      decideShard(evidence({ junit: bunFile(bunCase("s1", "skipped", 1), bunCase("s2", "skipped", 2)) })).reason,
    ).toBe("all 2 tests skipped");
    expect(decideShard(evidence({ junit: bunFile(bunCase("t", "todo", 1)) })).reason).toBe("all 1 test todo");
    expect(
      decideShard(evidence({ junit: bunFile(bunCase("p", "passed", 1), bunCase("s", "skipped", 2)) })).reason,
    ).toBe("all tests passed");
  });
  test(
    "names keep escape sequences, ESC shown: from events " + "(ended or killed); without them, what Bun's JUnit kept",
    () => {
      const raw = "\x1b[31mred\x1b[0m passes";
      const fromJUnitOnly = decideShard(evidence({ junit: bunFile(bunCase("[31mred[0m passes", "passed", 1)) }));
      const withEvents = decideShard(
        evidence({
          junit: bunFile(bunCase("[31mred[0m passes", "passed", 1)),
          events: connected(evTest(raw, "ended", "passed")),
          testsStarted: 1,
        }),
      );
      const killed = decideShard(
        evidence({
          process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM" }),
          events: connected(evTest(raw, "running")),
        }),
      );
      const shown = "\u241b[31mred\u241b[0m passes";
      expect([fromJUnitOnly, withEvents, killed].map((r) => r.tests[0]!.name)).toEqual([
        "[31mred[0m passes",
        shown,
        shown,
      ]);
    },
  );
});

test(
  "exit 1, end mark, no JUnit, found tests none ran (a throw after test(), test.only under CI): failed load, " +
    "not a crash",
  () => {
    const events = {
      connected: true,
      looseErrors: [{ file: "a.test.ts", message: ".only is disabled in CI environments", type: "Error" }],
      tests: [evTest("a", "found")],
    };
    const result = decideShard(
      evidence({ process: ran({ exitCode: 1 }), events, finishedNormally: true, testsStarted: 0 }),
    );
    expect(result.status).toBe("failed");
    expect(result.tests.map((t) => [t.name, t.status, t.failure?.type])).toEqual([
      ["(whole file)", "failed", "load-error"],
      ["a", "never-started", "never-started"],
    ]);
    // Without the end mark the same evidence is a process that ended early.
    expect(
      decideShard(evidence({ process: ran({ exitCode: 1 }), events, finishedNormally: false, testsStarted: 0 })).status,
    ).toBe("crashed");
  },
);

test(
  "a killed shard whose in-flight test lost its start event: " +
    "the preload's start count names it, no hook is blamed",
  () => {
    // Found order as Bun sends it (declaration order); the run order (events/run-order.ts) decides, not the line.
    const events = {
      connected: true,
      looseErrors: [],
      tests: [
        { ...evTest("forges", "found"), line: 16, runOrder: 0 },
        { ...evTest("fails", "found"), line: 17, runOrder: 1 },
      ],
    };
    const result = decideShard(evidence({ events, testsStarted: 1, finishedNormally: false }));
    expect(names(result)).toEqual([
      ["forges", "crashed"],
      ["fails", "never-started"],
    ]);
    // With the counts agreeing, nothing had started: code outside tests was in flight.
    expect(names(decideShard(evidence({ events, testsStarted: 0, finishedNormally: false })))).toEqual([
      ["forges", "never-started"],
      ["fails", "never-started"],
      ["beforeAll hook", "crashed"],
    ]);
  },
);

test(
  "a killed shard whose channel could not read a frame says a test may be missing, failed, in the file in " +
    "flight; the notes are the shard's",
  () => {
    const result = decideShard(
      evidence({
        process: ran({ killedBy: "timeout", exitCode: null, signal: "SIGTERM" }),
        events: {
          connected: true,
          looseErrors: [],
          tests: [evTest("before", "ended", "passed"), evTest("spin", "running"), evTest("after", "found")],
          unreadFrames: 1,
        },
        notes: [
          "1 inspector frame was too large to read even with its strings cut; a test it described may be missing " +
            "from the entries",
        ],
      }),
    );
    expect(result.status).toBe("timed-out");
    expect(result.tests.map((t) => [t.name, t.status, t.failure?.type])).toEqual([
      ["before", "passed", undefined],
      ["spin", "timed-out", "timeout"],
      ["after", "never-started", "never-started"],
      ["(unreadable inspector event)", "failed", "unreadable-event"],
    ]);
    expect(result.tests[3]!.failure!.message).toBe(
      "an inspector event was too large to read: a test of this shard may be missing from its entries (killed after " +
        "3 s wall-clock timeout)",
    );
    expect(result.notes).toEqual([
      "1 inspector frame was too large to read even with its strings cut; a test it described may be missing from " +
        "the entries",
    ]);
    // No notes: no field.
    expect("notes" in decideShard(evidence({ junit: passedJUnit, finishedNormally: true, testsStarted: 1 }))).toBe(
      false,
    );
  },
);

test(
  "Bun's JUnit past the read limit after a normal end: failed (failed to read it), the events' statuses kept; " +
    "any other unusable JUnit stays crashed",
  () => {
    const over =
      "failed to read Bun's JUnit report: over 17084416 bytes even with long texts cut, past the read limit (16.3 MiB: …)";
    const tests = [evTest("a", "ended", "passed"), evTest("b", "ended", "failed")];
    const result = decideShard(
      evidence({
        finishedNormally: true,
        testsStarted: 2,
        junitProblem: over,
        junitOverLimit: true,
        events: { connected: true, looseErrors: [], tests },
      }),
    );
    expect([result.status, result.reason]).toEqual([
      "failed",
      `exited 0 after reaching the end of the run, but ${over}: per-test results are the events' where they have them`,
    ]);
    expect(result.tests.map((t) => [t.name, t.status, t.failure?.type])).toEqual([
      ["a", "passed", undefined],
      ["b", "failed", "failure"],
      ["(Bun's JUnit report)", "failed", "junit-unreadable"],
    ]);
    // A test whose end was lost is failed too, and not said to be in flight.
    const lost = decideShard(
      evidence({
        finishedNormally: true,
        testsStarted: 2,
        junitProblem: over,
        junitOverLimit: true,
        events: { connected: true, looseErrors: [], tests: [tests[0]!, evTest("c", "running")] },
      }),
    );
    expect(lost.tests.map((t) => [t.name, t.status, t.failure?.message])).toEqual([
      ["a", "passed", undefined],
      [
        "c",
        "failed",
        `its end event never arrived: exited 0 after reaching the end of the run, but ${over}: per-test results are ` +
          `the events' where they have them`,
      ],
    ]);
    // Malformed (not past the limit): still crashed; past the limit with an exit code other than 0/1: crashed.
    expect(
      decideShard(
        evidence({
          finishedNormally: true,
          junitProblem: "Bun's JUnit report is unreadable: malformed",
          events: { connected: true, looseErrors: [], tests },
        }),
      ).status,
    ).toBe("crashed");
    expect(
      decideShard(
        evidence({
          process: ran({ exitCode: 3 }),
          finishedNormally: true,
          junitProblem: over,
          junitOverLimit: true,
          events: { connected: true, looseErrors: [], tests },
        }),
      ).status,
    ).toBe("crashed");
  },
);

test("every way a shard ends without Bun's verdict: its status, reason and failure kind (one table, ENDINGS)", () => {
  const shard = { index: 1, slug: "a", files: ["a.test.ts"] };
  const whole = (r: ReturnType<typeof decideShard>) => [
    r.status,
    r.reason,
    r.tests.map((t) => [t.status, t.failure?.type]),
  ];
  const killed = (over: Partial<ProcessFacts>, rest: Partial<ShardEvidence> = {}) =>
    whole(decideShard(evidence({ process: ran({ exitCode: null, ...over }), ...rest })));
  const unusable = {
    finishedNormally: true,
    testsStarted: 1,
    junitProblem: "Bun's JUnit report is unreadable: malformed",
  };
  expect([
    killed({ killedBy: "timeout", signal: "SIGTERM" }),
    killed({ killedBy: "timeout", signal: "SIGKILL", escalated: true }),
    killed({ killedBy: "cancel", signal: "SIGTERM", cancelSignal: "SIGINT" }),
    killed({ killedBy: "cancel", signal: "SIGTERM" }),
    killed({ signal: "SIGSEGV" }),
    killed({ exitCode: 0 }, { ...unusable, junitOverLimit: true }),
    killed({ exitCode: 2 }, { ...unusable, junitOverLimit: true }),
    killed({ exitCode: 0 }, { finishedNormally: false, testsStarted: 1 }),
    killed({ exitCode: 134 }),
    whole(supervisionFailed(shard, "EMFILE")),
    whole(neverStarted(shard, "queued")),
    whole(skippedByDiff(shard, "no selected test")),
  ]).toEqual([
    ["timed-out", "killed after 3 s wall-clock timeout", [["timed-out", "timeout"]]],
    [
      "timed-out",
      "killed after 3 s wall-clock timeout (SIGKILL after 1 s grace period: SIGTERM was ignored)",
      [["timed-out", "timeout"]],
    ],
    ["crashed", "run cancelled (SIGINT)", [["crashed", "crash"]]],
    ["crashed", "run cancelled", [["crashed", "crash"]]],
    ["crashed", "killed by SIGSEGV, a signal shardguard did not send", [["crashed", "crash"]]],
    [
      "failed",
      "exited 0 after reaching the end of the run, but Bun's JUnit report is unreadable: malformed: per-test " +
        "results are the events' where they have them",
      [["failed", "junit-unreadable"]],
    ],
    [
      "crashed",
      "exited 2 after reaching the end of the run, but Bun's JUnit report is unreadable: malformed: per-test " +
        "results are the events' where they have them",
      [["crashed", "crash"]],
    ],
    [
      "crashed",
      "exited 0 before finishing (Bun wrote no JUnit report): the run ended early, e.g. a test called process.exit",
      [["crashed", "crash"]],
    ],
    ["crashed", "exited with code 134 (Bun wrote no JUnit report)", [["crashed", "crash"]]],
    ["crashed", "shardguard could not supervise this shard: EMFILE", [["crashed", "crash"]]],
    ["never-started", "queued", [["never-started", "never-started"]]],
    ["skipped-by-diff", "no selected test", [["skipped-by-diff", "skipped-by-diff"]]],
  ]);
});
