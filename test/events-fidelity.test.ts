/**
 * What the event model keeps of what Bun sends, whatever its size: Bun's
 * wrapped 32-bit `elapsed` (runner/events/elapsed.ts; a test longer than
 * 2^31 ns keeps its end and its duration; values are Bun 1.4.4's, measured,
 * docs/bun-behaviour.md), bounded error lists, and the note of a shard whose
 * events were lost.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ELAPSED_WRAP_NS, testDurationNs } from "../runner/events/elapsed.ts";
import { TestEventModel } from "../runner/events/test-model.ts";
import { parseInspectorMessage } from "../runner/events/wire.ts";
import { testStates } from "./helpers/model-states.ts";
import { lostEventsNote } from "../runner/events/event-evidence.ts";
import { bunBinary, SUPPORTED_BUNS } from "./helpers/bun-versions.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

/** What Bun 1.4.4 sends for a test of `ns` nanoseconds: the low 32 bits, signed. */
const wrapped = (ns: number) => (((ns % ELAPSED_WRAP_NS) + ELAPSED_WRAP_NS) % ELAPSED_WRAP_NS) | 0;

describe("testDurationNs", () => {
  test("the measured values: 2.3 s sent as -1993799111, 5.0008 s as 705809268", () => {
    expect(testDurationNs(-1993799111, 2.3e9)).toBe(-1993799111 + 2 ** 32);
    expect(testDurationNs(705809268, 5.0e9)).toBe(705809268 + 2 ** 32);
  });

  test("tests of 10 ms to 20 minutes come back exactly from the wrapped value and a receive interval off by up to ±0.9 s", () => {
    for (const ns of [10e6, 2.1e9, 2.2e9, 2.5e9, 4.29e9, 4.3e9, 5e9, 8.7e9, 60e9, 1200e9 + 123]) {
      for (const skew of [-0.9e9, -0.05e9, 0, 0.05e9, 0.9e9]) {
        const received = Math.max(0, ns + skew);
        expect(testDurationNs(wrapped(ns), received)).toBe(ns);
      }
    }
  });

  test("without a receive interval: the smallest value Bun's can stand for", () => {
    expect(testDurationNs(-1993799111, undefined)).toBe(-1993799111 + 2 ** 32);
    expect(testDurationNs(5, undefined)).toBe(5);
    expect(testDurationNs(0, undefined)).toBe(0);
  });

  test(
    "clocks that disagree past a quarter wrap: the larger " + "of the runner's interval and Bun's smallest reading",
    () => {
      // Runner saw 0.5 s where Bun's value says at least 3 s: its start was read late.
      expect(testDurationNs(wrapped(3e9), 0.5e9)).toBe(3e9);
      // Runner saw 3.2 s where Bun's value reads 1 s (or 5.29 s): the runner's interval.
      expect(testDurationNs(1e9, 3.2e9)).toBe(3.2e9);
    },
  );

  test(
    "Bun 1.3.13's -2^31 for any test of 2^31 ns or more (2.3 s " +
      "sent as -2147483648): the runner's interval, at least 2^31 ns",
    () => {
      expect(testDurationNs(-(2 ** 31), 2.3e9)).toBe(2.3e9);
      expect(testDurationNs(-(2 ** 31), 3.1e9)).toBe(3.1e9);
      expect(testDurationNs(-(2 ** 31), 9e9)).toBe(9e9);
      // A late-read start cannot make it shorter than Bun's bound; without an interval the bound itself.
      expect(testDurationNs(-(2 ** 31), 1.9e9)).toBe(2 ** 31);
      expect(testDurationNs(-(2 ** 31), undefined)).toBe(2 ** 31);
    },
  );

  test(
    "a value outside the 32-bit range is a Bun that does not " +
      "wrap: taken as it is; a negative one falls back to the runner",
    () => {
      expect(testDurationNs(7e9, 7.01e9)).toBe(7e9);
      expect(testDurationNs(2.5, 3)).toBe(2.5);
      expect(testDurationNs(-5e9, 1e6)).toBe(1e6);
      expect(testDurationNs(Number.NaN, 2e6)).toBe(2e6);
      expect(testDurationNs(Number.NaN, undefined)).toBe(0);
    },
  );
});

describe("the model with wrapped end events", () => {
  test("a 2.5 s and a 5 s test end passed with their real durations; the third stays in flight", () => {
    const clock = { t: 0 };
    const model = new TestEventModel({ root: "/p", now: () => clock.t });
    const apply = (text: string) => {
      const parsed = parseInspectorMessage(text);
      if (parsed.kind !== "event") throw new Error(`not an event: ${text} (${parsed.kind})`);
      model.apply(parsed.event);
    };
    for (const [id, name] of [
      [1, "slow 1"],
      [2, "slow 2"],
      [3, "spin"],
    ] as const) {
      apply(
        `{"method":"TestReporter.found","params":{"id":${id},"url":"/p/a.test.ts",` +
          `"line":${id},"name":"${name}","type":"test"}}`,
      );
    }
    apply('{"method":"TestReporter.start","params":{"id":1}}');
    clock.t += 2501.08;
    apply(`{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":${wrapped(2501.08e6)}}}`);
    apply('{"method":"TestReporter.start","params":{"id":2}}');
    clock.t += 5000.78;
    apply('{"method":"TestReporter.end","params":{"id":2,"status":"pass","elapsed":705809268}}');
    apply('{"method":"TestReporter.start","params":{"id":3}}');
    const tests = model.eventTests(clock.t + 100);
    expect(tests.map((t) => [t.name, t.state, t.status])).toEqual([
      ["slow 1", "ended", "passed"],
      ["slow 2", "ended", "passed"],
      ["spin", "running", undefined],
    ]);
    expect(tests[0]!.durationMs).toBeCloseTo(2501.08, 3);
    expect(tests[1]!.durationMs).toBeCloseTo(5000.776564, 3);
    // Each start and end was applied to its test once: no start counted twice, no test lost.
    expect(tests.map((t) => t.attempts)).toEqual([1, 1, 1]);
  });

  test("with a retry the final attempt's receive interval picks the wrap", () => {
    const clock = { t: 0 };
    const model = new TestEventModel({ root: "/p", now: () => clock.t });
    model.found(1, "/p/a.test.ts", 1, "flaky slow", "test", undefined);
    model.start(1);
    clock.t += 3000;
    model.start(1); // the first attempt failed
    clock.t += 4600;
    model.end(1, "pass", wrapped(4600e6));
    const [t] = model.eventTests(clock.t);
    expect([t!.status, t!.attempts]).toEqual(["passed", 2]);
    expect(t!.durationMs).toBeCloseTo(4600, 3);
  });
});

describe("error lists are bounded (test-state.ts pushError)", () => {
  test("16,000 errors in one test: the first and last four are kept, with one stand-in counting the rest", () => {
    const model = new TestEventModel({ root: "/p" });
    model.found(1, "/p/a.test.ts", 1, "rejects", "test", undefined);
    model.start(1);
    for (let i = 0; i < 16_000; i++)
      model.apply({
        method: "LifecycleReporter.error",
        params: { message: `rejection ${i}`, name: "Error", urls: ["/p/a.test.ts"], lineColumns: [2, 3] },
      });
    model.end(1, "fail", 1e6);
    const [t] = testStates(model);
    expect(t!.errors.map((e) => e.message)).toEqual([
      "rejection 0",
      "rejection 1",
      "rejection 2",
      "rejection 3",
      "[shardguard: 15992 more errors left out here; full text in the shard log]",
      "rejection 15996",
      "rejection 15997",
      "rejection 15998",
      "rejection 15999",
    ]);
    expect([t!.failure!.type, t!.failure!.errorName]).toEqual(["failure", "Error"]);
    expect(model.errorsLeftOut()).toBe(15_992);
    expect([t!.status, t!.phase]).toEqual(["failed", "ended"]);
  });
});

describe("lostEventsNote (events/event-evidence.ts): a shard whose events were lost says so", () => {
  const t = (attempts: number) => ({
    name: "t",
    file: "a.test.ts",
    state: "ended" as const,
    status: "passed" as const,
    attempts,
    durationMs: 1,
    attemptFailures: [],
  });
  test("fewer start events than the preload's start marks", () => {
    expect(lostEventsNote({ connected: true, looseErrors: [], tests: [t(1), t(0)] }, 3, false, true)).toBe(
      "inspector events were lost: the child preload counted 3 test starts, the events carried 1 (the end-of-run " +
        "barrier was not answered); what the missing events would " +
        "add (retries, flakiness, lines, tests in flight) is unknown",
    );
    expect(lostEventsNote({ connected: true, looseErrors: [], tests: [] }, 1, true, true)).toContain(
      "counted 1 test starts, the events carried 0;",
    );
  });
  test("a normal end without the barrier's reply; nothing when all arrived, or without a channel", () => {
    expect(lostEventsNote({ connected: true, looseErrors: [], tests: [t(1)] }, 1, false, true)).toBe(
      "the end-of-run barrier was not answered though Bun reached " +
        "the end of the run: the last inspector events may be lost",
    );
    expect(lostEventsNote({ connected: true, looseErrors: [], tests: [t(2)] }, 2, true, true)).toBeNull();
    expect(lostEventsNote({ connected: true, looseErrors: [], tests: [t(1)] }, 1, false, false)).toBeNull();
    expect(lostEventsNote({ connected: false, looseErrors: [], tests: [] }, 5, false, true)).toBeNull();
  });
});

describe("tests over 2^31 ns in a shard killed at its timeout (durations from the events alone)", () => {
  /** One shard on Bun `version`: a 2.8 s test, then one that hangs until the 5 s timeout. */
  const runOn = async (version: string) => {
    const dir = makeSuite({
      "slow.test.ts":
        'import { describe, test } from "bun:test";\n' +
        'describe("checkout", () => {\n  test("pays in 2.8 s", async () => { await Bun.sleep(2800); });\n' +
        '  test("hangs", async () => { await new Promise(() => {}); }, 60_000);\n});\n',
    });
    const run = await runCli([
      "run",
      "--root",
      dir,
      "--bun",
      await bunBinary(version),
      "--timeout",
      "5",
      "--grace",
      "1",
    ]);
    return { code: run.code, tests: readReport(dir).shards[0]!.tests };
  };
  // Every Bun at once: each run waits on a sleep and its timeout, not on a core. One that threw fails its own test.
  const runs = new Map<string, Awaited<ReturnType<typeof runOn>> | Error>();
  beforeAll(async () => {
    await Promise.all(
      SUPPORTED_BUNS.map(async (version) => runs.set(version, await runOn(version).catch((e: Error) => e))),
    );
  }, 90_000);

  for (const version of SUPPORTED_BUNS) {
    test(`Bun ${version}: a 2.8 s test keeps its duration`, () => {
      const run = runs.get(version)!;
      if (run instanceof Error) throw run;
      const { code, tests } = run;
      expect(code).toBe(1);
      const paid = tests.find((t) => t.name === "checkout > pays in 2.8 s")!;
      expect(paid.status).toBe("passed");
      // On 1.3.13 the runner's receive interval is the duration; a start read late under load shortens it by up to
      // a few hundred ms, which must stay clear of 2^31 ns (2147.48 ms), the wrapped value.
      expect(paid.durationMs).toBeGreaterThan(2300);
      expect(paid.durationMs).toBeLessThan(3800);
      expect(tests.find((t) => t.name === "checkout > hangs")!.status).toBe("timed-out");
    });
  }
});
