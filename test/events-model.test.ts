/**
 * Pure tests of the event model (runner/events/test-model.ts), the message parser
 * (runner/events/wire.ts) and the journal (runner/events/journal.ts).
 * Event sequences follow what Bun 1.4.4 was measured to send (docs/bun-behaviour.md).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseInspectorMessage, type TestEvent } from "../runner/events/wire.ts";
import { CompactReader } from "../runner/events/compact.ts";
import { EventJournal, journalPathFor, readJournal, readJournalDetailed } from "../runner/events/journal.ts";
import { repairLatin1, TestEventModel } from "../runner/events/test-model.ts";
import { eventSink } from "./helpers/event-channel.ts";
import { foundCount, testStates, unfinishedTests, type TestState } from "./helpers/model-states.ts";
import { toEventEvidence } from "../runner/events/event-evidence.ts";
import { decideShard } from "../runner/results/verdict.ts";
import { TestResultSchema } from "../runner/results/report-model.ts";
import { tempDir } from "./helpers/cli.ts";

const ROOT = "/project";
const FILE = `${ROOT}/test/a.test.ts`;

const found = (
  id: number,
  name: string,
  extra: { parentId?: number; line?: number; url?: string; type?: "test" | "describe" } = {},
): TestEvent => ({
  method: "TestReporter.found",
  params: {
    id,
    url: extra.url ?? FILE,
    line: extra.line ?? id,
    name,
    type: extra.type ?? "test",
    ...(extra.parentId === undefined ? {} : { parentId: extra.parentId }),
  },
});
const describeBlock = (id: number, name: string, parentId?: number): TestEvent =>
  found(id, name, { type: "describe", ...(parentId === undefined ? {} : { parentId }) });
const start = (id: number): TestEvent => ({ method: "TestReporter.start", params: { id } });
const end = (id: number, status: "pass" | "fail" | "timeout" | "skip" | "todo", elapsedNs = 0): TestEvent => ({
  method: "TestReporter.end",
  params: { id, status, elapsed: elapsedNs },
});
const error = (message: string, urls: string[] = [FILE], lineColumns: number[] = [4, 60]): TestEvent => ({
  method: "LifecycleReporter.error",
  params: { message, name: "Error", urls, lineColumns, sourceLines: ["x"] },
});

/** A fake monotonic clock: returns `t`, which the test advances. */
function fakeClock() {
  const clock = { t: 1000, now: () => clock.t };
  return clock;
}

function byName(model: TestEventModel, fullName: string): TestState {
  const state = testStates(model).find((test) => test.fullName === fullName);
  if (!state) throw new Error(`no test ${fullName}`);
  return state;
}

describe("TestEventModel", () => {
  test("nested describes give the describe path, file relative to the root, line", () => {
    const model = TestEventModel.fromEvents(
      [
        describeBlock(1, "outer"),
        describeBlock(2, "inner", 1),
        found(3, "leaf", { parentId: 2, line: 7 }),
        found(4, "top"),
      ],
      { root: ROOT },
    );
    const leaf = byName(model, "outer > inner > leaf");
    expect(leaf.describePath).toEqual(["outer", "inner"]);
    expect(leaf.name).toBe("leaf");
    expect(leaf.file).toBe("test/a.test.ts");
    expect(leaf.url).toBe(FILE);
    expect(leaf.line).toBe(7);
    expect(leaf.phase).toBe("found");
    expect(leaf.status).toBeUndefined();
    expect(testStates(model).map((t) => t.fullName)).toEqual(["outer > inner > leaf", "top"]);
    expect(foundCount(model, "test/a.test.ts")).toBe(2);
    expect(foundCount(model, "test/other.test.ts")).toBe(0);
    expect(foundCount(model)).toBe(2);
  });

  test("pass, fail, timeout, skip and todo map to result statuses; elapsed ns → ms", () => {
    const clock = fakeClock();
    const model = new TestEventModel({ root: ROOT, now: clock.now });
    for (const event of [found(1, "p"), found(2, "f"), found(3, "t"), found(4, "s"), found(5, "d")]) model.apply(event);
    model.apply(start(1));
    clock.t += 50;
    model.apply(end(1, "pass", 50_356_532));
    model.apply(start(2));
    model.apply(error("expect(received).toBe(expected)\n\nExpected: 2\nReceived: 1\n"));
    model.apply(end(2, "fail", 1_000_000));
    model.apply(start(3));
    model.apply(end(3, "timeout", 100_155_268));
    model.apply(end(4, "skip"));
    model.apply(end(5, "todo"));

    const [p, f, t, s, d] = testStates(model);
    expect(p?.status).toBe("passed");
    expect(p?.durationMs).toBeCloseTo(50.356532, 6);
    expect(p?.startedAtMs).toBe(1000);
    expect(p?.endedAtMs).toBe(1050);
    expect(p?.failure).toBeUndefined();

    expect(f?.status).toBe("failed");
    expect([f?.failure?.type, f?.failure?.errorName]).toEqual(["failure", "Error"]);
    expect(f?.failure?.message).toBe("expect(received).toBe(expected)\n\nExpected: 2\nReceived: 1");
    expect(f?.failure?.details).toContain("at test/a.test.ts:4:60");

    expect(t?.status).toBe("failed");
    expect(t?.bunStatus).toBe("timeout");
    expect(t?.failure?.type).toBe("timeout");
    expect(t?.failure?.message).toContain("per-test timeout");

    expect(s?.status).toBe("skipped");
    expect(s?.attempts).toBe(0);
    expect(s?.phase).toBe("ended");
    expect(s?.startedAtMs).toBeUndefined();
    expect(d?.status).toBe("todo");
    expect(testStates(model)).toHaveLength(5);
  });

  test("retry that passes: one attempt failure, flaky, duration of the final attempt", () => {
    const model = TestEventModel.fromEvents(
      [found(6, "flaky"), start(6), error("first try failed"), start(6), end(6, "pass", 50_210_318)],
      { root: ROOT },
    );
    const state = byName(model, "flaky");
    expect(state.status).toBe("passed");
    expect(state.attempts).toBe(2);
    expect(state.flaky).toBe(true);
    expect(state.attemptFailures).toEqual([{ type: "failure", errorName: "Error", message: "first try failed" }]);
    expect(state.errors.map((e) => [e.attempt, e.message])).toEqual([[1, "first try failed"]]);
    expect(state.failure).toBeUndefined();
    expect(state.durationMs).toBeCloseTo(50.210318, 6);
  });

  test("retry that fails twice: first attempt in attemptFailures, second is the failure", () => {
    const model = TestEventModel.fromEvents(
      [found(7, "bad"), start(7), error("one"), start(7), error("two"), end(7, "fail", 5)],
      { root: ROOT },
    );
    const state = byName(model, "bad");
    expect(state.status).toBe("failed");
    expect(state.flaky).toBe(false);
    expect(state.attemptFailures).toEqual([{ type: "failure", errorName: "Error", message: "one" }]);
    expect(state.failure?.message).toBe("two");
  });

  test("a retried attempt without an error (timed out) still counts as a failed attempt", () => {
    const model = TestEventModel.fromEvents([found(8, "slow"), start(8), start(8), end(8, "timeout", 100_000_000)], {
      root: ROOT,
    });
    const state = byName(model, "slow");
    expect(state.attempts).toBe(2);
    expect(state.attemptFailures).toHaveLength(1);
    expect(state.attemptFailures[0]).toEqual({
      type: "failure",
      message: "attempt 1 failed; Bun reported no error for it (a per-test timeout sends none)",
    });
    expect(state.failure?.type).toBe("timeout");
  });

  test("a fail without any error event says so instead of inventing a message", () => {
    const model = TestEventModel.fromEvents([found(1, "x"), start(1), end(1, "fail", 2_000_000)], { root: ROOT });
    expect(byName(model, "x").failure).toEqual({
      type: "failure",
      message: "Bun reported the test as failed; no error message was received (ran 2 ms)",
    });
  });

  test("lost end events: started tests stay running, unstarted stay found; nothing passes", () => {
    const clock = fakeClock();
    const model = new TestEventModel({ root: ROOT, now: clock.now });
    for (const event of [found(1, "one"), found(2, "two"), found(3, "three"), start(1), end(1, "pass", 1e6)]) {
      model.apply(event);
    }
    clock.t = 2000;
    model.apply(start(2));
    // The child dies here: no end for 2, nothing for 3.
    const [one, two, three] = testStates(model);
    expect(one?.status).toBe("passed");
    expect(two?.phase).toBe("running");
    expect(two?.status).toBeUndefined();
    expect(two?.durationMs).toBeUndefined();
    expect(two?.startedAtMs).toBe(2000);
    expect(three?.phase).toBe("found");
    expect(three?.attempts).toBe(0);
    expect(model.running()?.name).toBe("two");
    expect(unfinishedTests(model).map((t) => t.name)).toEqual(["two"]);

    // The runner's merge turns the phases into statuses, never `passed` for the unfinished.
    clock.t = 3500;
    const evidence = toEventEvidence(model, true, clock.now);
    const result = decideShard({
      index: 1,
      slug: "a",
      files: ["test/a.test.ts"],
      process: {
        started: true,
        exitCode: null,
        signal: "SIGTERM",
        killedBy: "timeout",
        escalated: false,
        durationMs: 3500,
        startedAt: null,
      },
      junit: null,
      events: evidence,
      passWithNoTests: false,
      timeoutMs: 3000,
      graceMs: 1000,
      logPath: null,
      logIncomplete: false,
    });
    for (const test of result.tests) TestResultSchema.parse(test);
    expect(result.tests.map((r) => [r.name, r.status, r.durationMs])).toEqual([
      ["one", "passed", 1],
      ["two", "timed-out", 1500],
      ["three", "never-started", 0],
    ]);
  });

  test("running() is the latest started unfinished test; errors go to it (concurrent tests)", () => {
    const model = new TestEventModel({ root: ROOT });
    for (const event of [found(1, "c1"), found(2, "c2"), start(1), start(2)]) model.apply(event);
    expect(model.running()?.name).toBe("c2");
    model.apply(end(2, "pass", 1));
    expect(model.running()?.name).toBe("c1");
    model.apply(error("c1 broke"));
    model.apply(end(1, "fail", 1));
    expect(byName(model, "c1").failure?.message).toBe("c1 broke");
    expect(byName(model, "c2").errors).toEqual([]);
    expect(model.running()).toBeUndefined();
  });

  test("with several concurrent tests running, an error goes to the test whose body holds its line", () => {
    const model = new TestEventModel({ root: ROOT });
    for (const event of [
      found(1, "c1", { line: 3 }),
      found(2, "c2", { line: 4 }),
      found(3, "c3", { line: 9 }),
      start(1),
      start(2),
      start(3),
    ])
      model.apply(event);
    // c3 started last, but the throw is at line 4: inside c2.
    model.apply(error("c2 broke", [FILE], [4, 30]));
    model.apply(error("c1 broke", [FILE], [3, 12]));
    model.apply(error("no line", [FILE], []));
    expect(byName(model, "c2").errors.map((e) => e.message)).toEqual(["c2 broke"]);
    expect(byName(model, "c1").errors.map((e) => e.message)).toEqual(["c1 broke"]);
    expect(byName(model, "c3").errors.map((e) => e.message)).toEqual(["no line"]);
  });

  test("errors while no test runs are kept outside tests, with the file they name", () => {
    const other = `${ROOT}/test/b.test.ts`;
    const model = TestEventModel.fromEvents(
      [
        found(1, "a", { url: other }),
        error("top level boom", [`${ROOT}/helpers/h.ts`, other], [3, 7, 1, 1]),
        error("no location", [], []),
      ],
      { root: ROOT },
    );
    const outside = model.errorsOutsideTests();
    expect(outside).toHaveLength(2);
    expect(outside[0]?.file).toBe("test/b.test.ts");
    expect(outside[0]?.locations[0]).toEqual({ file: "helpers/h.ts", line: 3, column: 7 });
    expect(outside[0]?.attempt).toBe(0);
    expect(outside[1]?.file).toBeUndefined();
    expect(byName(model, "a").errors).toEqual([]);
  });

  test("snapshots do not change when later events arrive", () => {
    const model = new TestEventModel({ root: ROOT });
    model.apply(found(1, "x"));
    const before = testStates(model)[0];
    model.apply(start(1));
    expect(before?.phase).toBe("found");
    expect(testStates(model)[0]?.phase).toBe("running");
  });

  test("inconsistent events are ignored, not thrown; a second end wins", () => {
    const model = TestEventModel.fromEvents(
      [
        describeBlock(1, "d"),
        found(1, "dup"),
        start(1),
        start(99),
        end(98, "pass"),
        found(2, "t"),
        end(2, "pass"),
        end(2, "fail"),
      ],
      { root: ROOT },
    );
    // The duplicate found (id 1 is the describe), the describe's start and the unknown ids add no test.
    expect(testStates(model).map((t) => [t.id, t.fullName])).toEqual([[2, "t"]]);
    expect(model.running()).toBeUndefined();
    expect(byName(model, "t").status).toBe("failed");
  });

  test("a parentId cycle does not hang", () => {
    const model = TestEventModel.fromEvents(
      [describeBlock(1, "a", 2), describeBlock(2, "b", 1), found(3, "t", { parentId: 1 })],
      {
        root: ROOT,
      },
    );
    expect(testStates(model)[0]?.fullName).toBe("b > a > t");
  });

  test("files() lists files in first-found order", () => {
    const model = TestEventModel.fromEvents(
      [
        found(1, "x", { url: `${ROOT}/b.test.ts` }),
        found(2, "y", { url: `${ROOT}/a.test.ts` }),
        found(3, "z", { url: `${ROOT}/b.test.ts` }),
      ],
      { root: ROOT },
    );
    expect(model.files()).toEqual(["b.test.ts", "a.test.ts"]);
    expect(foundCount(model, "b.test.ts")).toBe(2);
  });
});

describe("parseInspectorMessage", () => {
  test("classifies events, replies, unknown methods, invalid params and garbage", () => {
    expect(parseInspectorMessage('{"method":"TestReporter.start","params":{"id":5}}')).toEqual({
      kind: "event",
      event: { method: "TestReporter.start", params: { id: 5 } },
    });
    expect(parseInspectorMessage('{"result":{},"id":1}')).toEqual({ kind: "response", id: 1 });
    expect(parseInspectorMessage('{"error":{"message":"no"},"id":2}')).toEqual({
      kind: "response",
      id: 2,
      error: '{"message":"no"}',
    });
    expect(parseInspectorMessage('{"method":"Console.messageAdded","params":{}}')).toEqual({
      kind: "ignored",
      method: "Console.messageAdded",
    });
    expect(
      parseInspectorMessage('{"method":"TestReporter.end","params":{"id":1,"status":"weird","elapsed":1}}').kind,
    ).toBe("invalid");
    expect(parseInspectorMessage("not json").kind).toBe("malformed");
    expect(parseInspectorMessage("[1,2]").kind).toBe("malformed");
    expect(parseInspectorMessage("null").kind).toBe("malformed");
  });

  test("keeps unknown fields of params (the journal stays raw)", () => {
    const parsed = parseInspectorMessage('{"method":"TestReporter.start","params":{"id":5,"future":true}}');
    expect(parsed.kind === "event" && parsed.event.params).toEqual({ id: 5, future: true });
  });
});

describe("the compact reader's start and end (compact.ts, the byte-level path)", () => {
  const read = (text: string): TestEvent | null => {
    let event: TestEvent | null = null;
    new CompactReader(eventSink((e) => (event = e))).read(Buffer.from(text));
    return event;
  };

  test("reads Bun's exact start and end messages as JSON.parse does", () => {
    for (const text of [
      '{"method":"TestReporter.start","params":{"id":0}}',
      '{"method":"TestReporter.start","params":{"id":123456789012345}}',
      '{"method":"TestReporter.end","params":{"id":7,"status":"pass","elapsed":335401}}',
      '{"method":"TestReporter.end","params":{"id":7,"status":"timeout","elapsed":0}}',
      '{"method":"TestReporter.end","params":{"id":7,"status":"todo","elapsed":12}}',
    ]) {
      const event = read(text);
      expect(event).toEqual(JSON.parse(text));
      expect(parseInspectorMessage(text)).toEqual({ kind: "event", event: event! });
    }
  });

  test("leaves everything else to the full parser, which stays the authority", () => {
    for (const text of [
      '{"method":"TestReporter.start","params":{"id":05}}', // not JSON
      '{"method":"TestReporter.start","params":{"id":}}',
      '{"method":"TestReporter.start","params":{"id":5}}x',
      '{"method":"TestReporter.start","params":{"id":5} }', // valid, but not Bun's bytes
      '{"method":"TestReporter.start","params":{"id":5,"future":true}}',
      '{"method":"TestReporter.start","params":{"id":1234567890123456}}', // past 15 digits
      '{"method":"TestReporter.end","params":{"id":1,"status":"passx","elapsed":7}}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"pas","elapsed":7}}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":7.5}}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":-}}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":--7}}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":7}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":7}}}',
      '{"method":"TestReporter.found","params":{"id":1}}',
    ]) {
      expect(read(text)).toBeNull();
    }
  });
});

describe("journal", () => {
  const dir = tempDir("sg-journal-");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("journalPathFor puts the journal next to the log", () => {
    expect(journalPathFor("/r/logs/shard-3.log")).toBe("/r/logs/shard-3.events.jsonl");
    expect(journalPathFor("/r/logs/shard-3")).toBe("/r/logs/shard-3.events.jsonl");
  });

  test("round trip: append, close, read back, rebuild the same model; mode 0600", async () => {
    const path = join(dir, "round.events.jsonl");
    const events = [
      describeBlock(1, "d"),
      found(2, "t", { parentId: 1 }),
      start(2),
      error("e"),
      start(2),
      end(2, "pass", 3e6),
    ];
    const journal = EventJournal.open(path);
    for (const event of events) journal.append(event);
    await journal.close();
    expect(journal.error).toBeUndefined();
    expect(journal.linesWritten).toBe(events.length);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const back = await readJournal(path);
    expect(back).toEqual(events);
    const state = testStates(TestEventModel.fromEvents(back, { root: ROOT }))[0];
    expect(state?.fullName).toBe("d > t");
    expect(state?.flaky).toBe(true);
  });

  test(
    "writes a message's own text or bytes as the line, " + "re-encodes one with a newline, and batches past 64 KiB",
    async () => {
      const path = join(dir, "messages.events.jsonl");
      const journal = EventJournal.open(path);
      const spaced = '{"method":"TestReporter.start", "params":{"id":1}}';
      journal.append(start(1), spaced);
      journal.append(
        end(1, "pass", 5),
        Buffer.from('{"method":"TestReporter.end","params":{"id":1,"status":"pass","elapsed":5}}'),
      );
      journal.append(start(2), '{"method":"TestReporter.start",\n"params":{"id":2}}');
      const long = found(3, "x".repeat(200_000));
      journal.append(long, JSON.stringify(long));
      for (let id = 4; id < 3004; id++) journal.append(start(id), Buffer.from(JSON.stringify(start(id))));
      await journal.close();
      const lines = readFileSync(path, "utf8").split("\n");
      expect(lines[0]).toBe(spaced);
      expect(lines[2]).toBe(JSON.stringify(start(2)));
      expect(lines.length).toBe(3004 + 1);
      const back = await readJournal(path);
      expect(back).toEqual([
        start(1),
        end(1, "pass", 5),
        start(2),
        long,
        ...Array.from({ length: 3000 }, (_, i) => start(i + 4)),
      ]);
    },
  );

  test("appends to an existing file and forces mode 0600", async () => {
    const path = join(dir, "append.events.jsonl");
    writeFileSync(path, `${JSON.stringify(start(1))}\n`, { mode: 0o644 });
    const journal = EventJournal.open(path);
    journal.append(end(1, "pass", 1));
    await journal.close();
    await journal.close(); // idempotent
    journal.append(start(2)); // ignored after close
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await readJournal(path)).toEqual([start(1), end(1, "pass", 1)]);
  });

  test("tolerates a truncated last line and counts invalid lines", async () => {
    const path = join(dir, "cut.events.jsonl");
    writeFileSync(path, `${JSON.stringify(start(1))}\nnot json\n{"method":"TestReporter.start","params":{}}\n`);
    appendFileSync(path, '{"method":"TestReporter.end","params":{"id":1,"sta');
    const read = await readJournalDetailed(path);
    expect(read.events).toEqual([start(1)]);
    expect(read.invalidLines).toBe(2);
    expect(read.truncatedTail).toBe(true);
  });

  test("a complete last line without a newline is kept", async () => {
    const path = join(dir, "nonl.events.jsonl");
    writeFileSync(path, `${JSON.stringify(start(1))}\n${JSON.stringify(end(1, "pass", 1))}`);
    const read = await readJournalDetailed(path);
    expect(read.events).toHaveLength(2);
    expect(read.truncatedTail).toBe(false);
  });
});

describe("repairLatin1", () => {
  test("undoes UTF-8 read as Latin-1 and leaves everything else alone", () => {
    expect(repairLatin1("/tmp/rÃ©/a.test.ts")).toBe("/tmp/ré/a.test.ts");
    expect(repairLatin1("/tmp/plain/a.test.ts")).toBe("/tmp/plain/a.test.ts");
    expect(repairLatin1("/tmp/日本/a.test.ts")).toBe("/tmp/日本/a.test.ts");
    // Latin-1 text that is not UTF-8 bytes stays as it is.
    expect(repairLatin1("/tmp/café")).toBe("/tmp/café");
  });
});
