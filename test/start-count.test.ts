/**
 * The child preload's start count against a killed shard's events
 * (results/start-count.ts `readStarts`, through decideShard), and Bun's run
 * order from the `found` tree (events/run-order.ts, through the event model).
 * The end-to-end runs of the same shapes are in test/lost-events.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { TestEventModel } from "../runner/events/test-model.ts";
import { runOrder } from "../runner/events/run-order.ts";
import { readStarts, type StartFacts } from "../runner/results/start-count.ts";
import { decideShard, type EventTest, type ProcessFacts, type ShardEvidence } from "../runner/results/verdict.ts";
import type { TestEvent } from "../runner/events/wire.ts";

const killed = (over: Partial<ProcessFacts> = {}): ProcessFacts => ({
  started: true,
  exitCode: null,
  signal: "SIGKILL",
  killedBy: null,
  escalated: false,
  durationMs: 800,
  startedAt: "2026-01-01T00:00:00.000Z",
  ...over,
});
/** An event test; `ended` ones passed. */
const t = (name: string, state: EventTest["state"], runOrder: number, file = "a.test.ts"): EventTest => ({
  name,
  file,
  state,
  ...(state === "ended" ? { status: "passed" as const } : {}),
  attempts: state === "found" ? 0 : 1,
  durationMs: 1,
  attemptFailures: [],
  runOrder,
});
const shard = (tests: EventTest[], over: Partial<ShardEvidence> = {}): ShardEvidence => ({
  index: 1,
  slug: "a",
  files: ["a.test.ts"],
  process: killed(),
  junit: null,
  events: { connected: true, looseErrors: [], tests },
  passWithNoTests: false,
  finishedNormally: false,
  filesStarted: ["a.test.ts"],
  timeoutMs: 3000,
  graceMs: 1000,
  logPath: "/logs/a.log",
  logIncomplete: false,
  ...over,
});
const rows = (r: ReturnType<typeof decideShard>) => r.tests.map((x) => [x.name, x.status]);
const messageOf = (r: ReturnType<typeof decideShard>, i: number) => r.tests[i]!.failure!.message;

/** 40 quick tests and a 41st that kills its group; the events end after `ended` ends (and a start, `running`). */
function groupKill(ended: number, running: boolean): EventTest[] {
  const state = (i: number) => (i < ended ? "ended" : i === ended && running ? "running" : "found");
  const tests = Array.from({ length: 40 }, (_, i) => t(`quick pass ${i}`, state(i), i));
  return [...tests, t("kills its group", "found", 40)];
}

describe("40 quick tests, then one that kills its process group: the count names every test that started", () => {
  test("events lost mid-file: the tests after the last end crashed (outcome unknown), the culprit in flight", () => {
    const result = decideShard(shard(groupKill(33, true), { testsStarted: 41 }));
    expect(result.status).toBe("crashed");
    expect(result.tests).toHaveLength(41);
    expect(
      rows(result)
        .slice(0, 33)
        .every(([, s]) => s === "passed"),
    ).toBe(true);
    const crashed = Array.from({ length: 7 }, (_, i) => [`quick pass ${33 + i}`, "crashed"]);
    expect(rows(result).slice(33)).toEqual([...crashed, ["kills its group", "crashed"]]);
    expect(messageOf(result, 33)).toBe(
      "it started, and its end event was lost when the process died (a later test had started): " +
        "its outcome is unknown (killed by SIGKILL, a signal shardguard did not send)",
    );
    const counted = "the child preload counted 41 test starts, the events carried 34";
    expect(messageOf(result, 34)).toStartWith(`it started (${counted}), and its start and end events were lost`);
    expect(messageOf(result, 40)).toStartWith(`in flight when the shard ended (its start event was lost: ${counted}`);
  });

  test("a count short of the plan: the tests it reaches started, the last in flight, the rest never started", () => {
    const result = decideShard(shard(groupKill(33, true), { testsStarted: 36 }));
    expect(rows(result).slice(33)).toEqual([
      ["quick pass 33", "crashed"],
      ["quick pass 34", "crashed"],
      ["quick pass 35", "crashed"],
      ...Array.from({ length: 4 }, (_, i) => [`quick pass ${36 + i}`, "never-started"]),
      ["kills its group", "never-started"],
    ]);
    expect(messageOf(result, 35)).toStartWith("in flight when the shard ended (its start event was lost");
  });

  test("only the plan and the first start arrived: no test passes, all 41 are there", () => {
    const result = decideShard(shard(groupKill(0, true), { testsStarted: 41 }));
    expect(result.tests).toHaveLength(41);
    expect(result.tests.every((x) => x.status === "crashed")).toBe(true);
    const inFlight = result.tests.filter((x) => x.failure!.message.startsWith("in flight"));
    expect(inFlight.map((x) => x.name)).toEqual(["kills its group"]);
  });

  test("every event lost, the file marked started: one entry for the file that says how many tests started", () => {
    const result = decideShard(shard([], { testsStarted: 41 }));
    expect(rows(result)).toEqual([["(whole file)", "crashed"]]);
    expect(messageOf(result, 0)).toStartWith(
      "41 test starts here that no received inspector event names " +
        "(the child preload counted 41 test starts, the events carried 0)",
    );
    expect(messageOf(result, 0)).toContain("the test in flight when the shard ended is among them");
  });

  test("the plan cut short (no start of the file arrived): the found tests started, the one in flight beyond", () => {
    const tests = Array.from({ length: 7 }, (_, i) => t(`quick pass ${i}`, "found", i));
    const result = decideShard(shard(tests, { testsStarted: 41 }));
    const unnamed = ["(tests whose events were lost)", "crashed"];
    expect(rows(result)).toEqual([...tests.map((x) => [x.name, "crashed"]), unnamed]);
    expect(messageOf(result, 7)).toStartWith("34 test starts here that no received inspector event names");
    expect(result.tests.slice(0, 7).every((x) => !x.failure!.message.includes("in flight"))).toBe(true);
  });

  test("with the counts agreeing, the test running by its events is the one in flight (as before)", () => {
    const tests = groupKill(40, false);
    tests[40] = { ...tests[40]!, state: "running", attempts: 1 };
    const result = decideShard(shard(tests, { testsStarted: 41 }));
    expect(rows(result).filter(([, s]) => s !== "passed")).toEqual([["kills its group", "crashed"]]);
    expect(messageOf(result, 40)).toStartWith("in flight when the shard ended");
  });
});

describe("readStarts: the rules one by one", () => {
  const facts = (tests: EventTest[], over: Partial<StartFacts> = {}): StartFacts => ({
    tests,
    files: ["a.test.ts"],
    testsStarted: 0,
    filesStarted: new Set(["a.test.ts"]),
    concurrent: false,
    reachedEnd: false,
    ...over,
  });
  const names = (set: Set<EventTest>) => [...set].map((x) => x.name).sort();

  test("run order, not found order, decides which tests the lost starts were", () => {
    // Found breadth first: top, after, then D's own test. Bun runs top, D > inside, after.
    const tests = [t("top", "ended", 0), t("after", "found", 2), t("D > inside", "found", 1)];
    const reading = readStarts(facts(tests, { testsStarted: 2 }));
    expect([names(reading.startLost), names(reading.inFlight)]).toEqual([["D > inside"], ["D > inside"]]);
  });

  test("tests ran concurrently: every started test without an end may have been in flight", () => {
    const tests = [t("a", "running", 0), t("b", "running", 1), t("c", "found", 2), t("d", "found", 3)];
    const reading = readStarts(facts(tests, { testsStarted: 3, concurrent: true }));
    expect([names(reading.inFlight), names(reading.endLost)]).toEqual([["a", "b", "c"], []]);
    const events = { connected: true, looseErrors: [], tests, concurrent: true };
    const result = decideShard(shard(tests, { testsStarted: 3, events }));
    expect(rows(result)).toEqual([
      ["a", "crashed"],
      ["b", "crashed"],
      ["c", "crashed"],
      ["d", "never-started"],
    ]);
    expect(messageOf(result, 0)).toContain("or its end event was lost (tests ran concurrently)");
  });

  test("a lost start with no test after the running one: a retry, the running test stays in flight", () => {
    const reading = readStarts(facts([t("a", "ended", 0), t("b", "running", 1)], { testsStarted: 3 }));
    expect([names(reading.inFlight), names(reading.endLost), names(reading.startLost)]).toEqual([["b"], [], []]);
  });

  test("Bun reached the end (the end mark): nothing in flight, the tests without an end lost it", () => {
    const tests = [t("a", "running", 0), t("b", "found", 1)];
    const reading = readStarts(facts(tests, { testsStarted: 2, reachedEnd: true }));
    expect([names(reading.inFlight), names(reading.endLost), reading.unnamedInFlight]).toEqual([[], ["a", "b"], null]);
  });

  test("a later file marked started: the file before it finished, the test in flight is in the later file", () => {
    const files = ["a.test.ts", "b.test.ts", "c.test.ts"];
    const tests = [t("a1", "ended", 0), t("a2", "running", 1), t("a3", "found", 2)];
    const filesStarted = new Set(["a.test.ts", "b.test.ts"]);
    const reading = readStarts(facts(tests, { files, testsStarted: 6, filesStarted }));
    expect([names(reading.endLost), names(reading.inFlight)]).toEqual([["a2", "a3"], []]);
    expect([[...reading.unnamed], reading.unnamedInFlight]).toEqual([[["b.test.ts", 3]], "b.test.ts"]);
    const result = decideShard(shard(tests, { files, testsStarted: 6, filesStarted: ["a.test.ts", "b.test.ts"] }));
    expect(result.tests.map((x) => [x.file, x.name, x.status])).toEqual([
      ["a.test.ts", "a1", "passed"],
      ["a.test.ts", "a2", "crashed"],
      ["a.test.ts", "a3", "crashed"],
      ["b.test.ts", "(whole file)", "crashed"],
      ["c.test.ts", "(whole file)", "never-started"],
    ]);
  });

  test("a file without a start mark holds no lost start; without marks at all the count alone places them", () => {
    const tests = [t("a1", "found", 0), t("a2", "found", 1)];
    expect(readStarts(facts(tests, { testsStarted: 1, filesStarted: new Set() })).startLost.size).toBe(0);
    expect(names(readStarts(facts(tests, { testsStarted: 1, filesStarted: undefined })).inFlight)).toEqual(["a1"]);
  });

  test("a passing end without a start is not Bun's: never started, and the lost starts can be placed on it", () => {
    const forged = { ...t("victim", "ended", 1), attempts: 0 };
    const skipped = { ...t("skipped", "ended", 2), status: "skipped" as const, attempts: 0 };
    const tests = [t("forger", "running", 0), forged, skipped];
    expect(rows(decideShard(shard(tests, { testsStarted: 1 })))).toEqual([
      ["forger", "crashed"],
      ["victim", "never-started"],
      ["skipped", "skipped"],
    ]);
    expect(names(readStarts(facts([tests[0]!, forged], { testsStarted: 2 })).inFlight)).toEqual(["victim"]);
  });

  test("no count (undefined) or a count below the events: the events alone, as they are", () => {
    const tests = [t("a", "ended", 0), t("b", "running", 1), t("c", "found", 2)];
    for (const testsStarted of [undefined, 0, 1]) {
      const reading = readStarts(facts(tests, { testsStarted }));
      expect([names(reading.inFlight), reading.startLost.size, reading.endLost.size]).toEqual([["b"], 0, 0]);
    }
  });

  test("every shape of lost tail: nothing inferred is passed, no test the count says started is never-started", () => {
    const timeout = killed({ killedBy: "timeout", signal: "SIGTERM" });
    const endings = [killed(), timeout, killed({ exitCode: 0, signal: null })];
    for (let ended = 0; ended <= 5; ended++) {
      for (const running of [false, true]) {
        for (let counted = 0; counted <= 8; counted++) {
          for (const how of endings) {
            const state = (i: number) => (i < ended ? "ended" : i === ended && running ? "running" : "found");
            const tests = Array.from({ length: 6 }, (_, i) => t(`t${i}`, state(i), i));
            const result = decideShard(shard(tests, { testsStarted: counted, process: how }));
            const passed = result.tests.filter((x) => x.status === "passed").map((x) => x.name);
            // More ended tests than the preload counted (beyond the one running): forged events, no pass stands.
            const overclaimed = counted > 0 && ended > counted;
            const ends = tests.filter((x) => x.state === "ended").map((x) => x.name);
            expect(passed).toEqual(overclaimed ? [] : ends);
            const started = Math.max(counted, ended + (running ? 1 : 0));
            const neverStarted = result.tests.filter((x) => x.status === "never-started").length;
            expect(neverStarted).toBeLessThanOrEqual(6 - Math.min(6, started));
          }
        }
      }
    }
  });
});

describe("run order from the found tree (events/run-order.ts)", () => {
  const found = (id: number, name: string, type: "test" | "describe", parentId?: number): TestEvent => ({
    method: "TestReporter.found",
    params: { id, url: "/r/a.test.ts", line: 1, name, type, ...(parentId !== undefined ? { parentId } : {}) },
  });

  test("Bun's breadth-first found order (measured on Bun 1.3.13 to 1.4.5) becomes its depth-first run order", () => {
    // As Bun sent them for: t1; describe A { a1; describe B { b1, b2 (test.each), bskip }; atodo; a2 }; t2;
    // describe C { c1 }; t3. The top level first, then A's blocks, then B's and C's.
    const events = [
      found(1, "t1", "test"),
      found(2, "A", "describe"),
      found(3, "t2", "test"),
      found(4, "C", "describe"),
      found(5, "t3", "test"),
      found(6, "a1", "test", 2),
      found(7, "B", "describe", 2),
      found(8, "atodo", "test", 2),
      found(9, "a2", "test", 2),
      found(10, "b1", "test", 7),
      found(11, "b2", "test", 7),
      found(12, "bskip", "test", 7),
      found(13, "c1", "test", 4),
    ];
    const model = TestEventModel.fromEvents(events, { root: "/r" });
    const inRunOrder = model
      .eventTests(0)
      .sort((a, b) => a.runOrder! - b.runOrder!)
      .map((x) => x.name);
    const a = ["A > a1", "A > B > b1", "A > B > b2", "A > B > bskip", "A > atodo", "A > a2"];
    expect(inRunOrder).toEqual(["t1", ...a, "t2", "C > c1", "t3"]);
  });

  test("a parent never found is the top level; a parent loop follows the rest; deep nesting does not overflow", () => {
    const block = (parentId: number | undefined, foundSeq: number) => ({ parentId, foundSeq });
    const describes = new Map([
      [10, block(11, 0)],
      [11, block(10, 1)],
    ]);
    const tests = new Map([
      [1, block(99, 2)],
      [2, block(10, 3)],
      [3, block(undefined, 4)],
    ]);
    expect([...runOrder(describes, tests)]).toEqual([
      [1, 0],
      [3, 1],
      [2, 2],
    ]);
    const deep = new Map<number, { parentId: number | undefined; foundSeq: number }>();
    for (let i = 0; i < 100_000; i++) deep.set(i, block(i === 0 ? undefined : i - 1, i));
    expect(runOrder(deep, new Map([[-1, block(99_999, 100_000)]])).get(-1)).toBe(0);
  });

  test("a start while another test runs marks the shard concurrent; a retry of the same test does not", () => {
    const start = (id: number): TestEvent => ({ method: "TestReporter.start", params: { id } });
    const events = [found(1, "a", "test"), found(2, "b", "test"), start(1), start(1)];
    const model = TestEventModel.fromEvents(events, { root: "/r" });
    expect(model.overlapped()).toBe(false);
    model.apply(start(2));
    expect(model.overlapped()).toBe(true);
  });
});
