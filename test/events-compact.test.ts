/**
 * The byte reader of Bun's compact found/start/end messages
 * (runner/events/compact.ts): byte-level checks that whatever it reads is
 * exactly what the full parser (wire.ts parseInspectorMessage) gives for
 * the same bytes, and that anything else is left to that parser; then a real
 * `bun test` child whose bytes are read by the channel (the runner's path)
 * and, recorded on the way, by the parser alone: the same model and the
 * same journal.
 */
import { acknowledgeEndOfRun, prepareStartCount } from "../runner/exec/marks.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { connect as netConnect, createServer as netServer } from "node:net";
import { join } from "node:path";
import { CompactReader, type CompactSink } from "../runner/events/compact.ts";
import { encodeFrame, FrameReader } from "../runner/events/frames.ts";
import { listenForTestEvents } from "../runner/events/inspector.ts";
import { openJournal, readJournal } from "../runner/events/journal.ts";
import { TestEventModel } from "../runner/events/test-model.ts";
import { socketDirFor, socketPathFor } from "../runner/events/socket-dir.ts";
import { parseInspectorMessage, type TestEvent } from "../runner/events/wire.ts";
import { SHARD_PRELOAD } from "../runner/exec/bun-command.ts";
import { capJsonStrings } from "../runner/util/text-cap.ts";
import { listenForAllEvents } from "./helpers/event-channel.ts";
import { testStates } from "./helpers/model-states.ts";
import { tempDir } from "./helpers/cli.ts";

const BUN = process.execPath;

/** What the reader handed to its sink for one message, as an event; null when it read nothing. */
function readCompact(bytes: Buffer, reader?: CompactReader, calls: TestEvent[] = []): TestEvent | null {
  const sink: CompactSink = {
    found: (id, url, line, name, type, parentId) =>
      calls.push({
        method: "TestReporter.found",
        params: { id, url, line, name, type, ...(parentId === undefined ? {} : { parentId }) },
      }),
    start: (id) => calls.push({ method: "TestReporter.start", params: { id } }),
    end: (id, status, elapsed) => calls.push({ method: "TestReporter.end", params: { id, status, elapsed } }),
  };
  const before = calls.length;
  const read = (reader ?? new CompactReader(sink)).read(bytes);
  if (!read) {
    expect(calls.length).toBe(before); // nothing half-read
    return null;
  }
  expect(calls.length).toBe(before + 1);
  return calls[calls.length - 1]!;
}

/** The full parser's event for the same bytes, as the channel gets it; null when it is not an event. */
function parsed(bytes: Buffer): TestEvent | null {
  const result = parseInspectorMessage(capJsonStrings(bytes));
  return result.kind === "event" ? result.event : null;
}

const URL = "/r/t/a.test.ts";
const foundText = (fields: string) => `{"method":"TestReporter.found","params":{${fields}}}`;

describe("CompactReader against the full parser, byte by byte", () => {
  /** Bun 1.4.4's own forms: the reader must take each, and give what the parser gives. */
  const bunForms = [
    foundText(`"id":1,"url":"${URL}","line":2,"name":"t0","type":"test"`),
    foundText(`"id":5,"url":"${URL}","line":3,"name":"inner","type":"describe","parentId":1`),
    foundText(`"id":7,"url":"${URL}","line":30,"name":"héllo wörld ✓ 日本語 😀","type":"test","parentId":5`),
    foundText(`"id":8,"url":"/r/t/Ã©.test.ts","line":1,"name":"latin-1 read url","type":"test"`),
    foundText(`"id":9,"url":"${URL}","line":0,"name":"","type":"test"`),
    '{"method":"TestReporter.start","params":{"id":7}}',
    '{"method":"TestReporter.end","params":{"id":7,"status":"pass","elapsed":114375}}',
    '{"method":"TestReporter.end","params":{"id":8,"status":"skip","elapsed":0}}',
    '{"method":"TestReporter.end","params":{"id":9,"status":"todo","elapsed":0}}',
    '{"method":"TestReporter.end","params":{"id":10,"status":"fail","elapsed":5}}',
    '{"method":"TestReporter.end","params":{"id":11,"status":"timeout","elapsed":999999999999999}}',
    // Bun's 32-bit elapsed, wrapped: a 2.3 s test (measured) and the lowest value.
    '{"method":"TestReporter.end","params":{"id":12,"status":"pass","elapsed":-1993799111}}',
    '{"method":"TestReporter.end","params":{"id":13,"status":"fail","elapsed":-2147483648}}',
    '{"method":"TestReporter.end","params":{"id":14,"status":"pass","elapsed":-0}}',
  ];
  for (const text of bunForms) {
    test(`read as the parser reads it: ${text.slice(0, 90)}`, () => {
      const bytes = Buffer.from(text);
      const event = readCompact(bytes);
      expect(event).not.toBeNull();
      expect(event).toEqual(parsed(bytes)!);
    });
  }

  /** Anything else: left to the parser (which may accept it, reject it or call it malformed). */
  const others = [
    foundText(`"id":1,"url":"${URL}","line":2,"name":"a\\"b","type":"test"`), // an escape in the name
    foundText(`"id":1,"url":"${URL}","line":2,"name":"tab\\there","type":"test"`),
    foundText(`"id":1,"url":"/r/t/\\u00e9.test.ts","line":2,"name":"t","type":"test"`), // an escape in the url
    foundText(`"id":1,"url":"${URL}","line":2,"name":"raw\ttab","type":"test"`), // a raw control character: not JSON
    foundText(`"id":1, "url":"${URL}","line":2,"name":"t","type":"test"`), // a space
    foundText(`"id":1,"line":2,"url":"${URL}","name":"t","type":"test"`), // key order
    foundText(`"id":1,"url":"${URL}","name":"t","type":"test"`), // no line
    foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"test","parentId":1,"extra":1`),
    foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"testx"`),
    foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"Test"`),
    foundText(`"id":01,"url":"${URL}","line":2,"name":"t","type":"test"`), // a leading zero: not JSON
    foundText(`"id":-1,"url":"${URL}","line":2,"name":"t","type":"test"`),
    foundText(`"id":1.5,"url":"${URL}","line":2,"name":"t","type":"test"`),
    foundText(`"id":1,"url":"${URL}","line":2.5,"name":"t","type":"test"`),
    foundText(`"id":1234567890123456,"url":"${URL}","line":2,"name":"t","type":"test"`), // 16 digits
    foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"test","parentId":-3`),
    `${foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"test"`)} `, // trailing bytes
    foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"test"`).slice(0, -1), // cut short
    // over 64 KiB: cut by the parser
    foundText(`"id":1,"url":"${URL}","line":2,"name":"${"x".repeat(70 * 1024)}","type":"test"`),
    '{"method":"TestReporter.start","params":{"id":7} }',
    '{"method":"TestReporter.start","params":{"id":"7"}}',
    '{"method":"TestReporter.end","params":{"id":7,"status":"passed","elapsed":1}}',
    '{"method":"TestReporter.end","params":{"id":7,"status":"pass","elapsed":1.5}}',
    '{"method":"TestReporter.end","params":{"elapsed":1,"id":7,"status":"pass"}}',
    '{"method":"TestReporter.end","params":{"id":7,"status":"pass","elapsed":-}}',
    '{"method":"TestReporter.end","params":{"id":7,"status":"pass","elapsed":-01}}',
    '{"method":"TestReporter.end","params":{"id":7,"status":"pass","elapsed":+1}}',
    '{"method":"LifecycleReporter.error","params":{"message":"boom","urls":[],"lineColumns":[]}}',
    '{"method":"Console.messageAdded","params":{}}',
    '{"id":4,"result":{"result":{"objectId":"1"}}}',
    "not json at all",
    "",
  ];
  for (const text of others) {
    test(`left to the parser: ${JSON.stringify(text.slice(0, 90))}`, () => {
      expect(readCompact(Buffer.from(text))).toBeNull();
    });
  }

  test("invalid UTF-8 in a name decodes as the parser decodes it (replacement characters)", () => {
    const bytes = Buffer.concat([
      Buffer.from(foundText(`"id":3,"url":"${URL}","line":2,"name":"a`)),
      Buffer.from([0xe2, 0x28, 0xff]),
      Buffer.from('","type":"test"}}'),
    ]);
    const event = readCompact(bytes);
    expect(event).not.toBeNull();
    expect(event).toEqual(parsed(bytes)!);
    expect((event as Extract<TestEvent, { method: "TestReporter.found" }>).params.name).toContain("\ufffd");
  });

  test("equal urls in a row are one string; a new url is decoded, and so is the old one again", () => {
    const calls: TestEvent[] = [];
    const reader = new CompactReader({
      found: (id, url, line, name, type) =>
        calls.push({ method: "TestReporter.found", params: { id, url, line, name, type } }),
      start: () => {},
      end: () => {},
    });
    const other = "/r/t/b.test.ts";
    const texts = [URL, URL, other, URL].map((url, i) =>
      foundText(`"id":${i + 1},"url":"${url}","line":2,"name":"t${i}","type":"test"`),
    );
    for (const text of texts) expect(reader.read(Buffer.from(text))).toBe(true);
    const urls = calls.map((c) => (c as Extract<TestEvent, { method: "TestReporter.found" }>).params.url);
    expect(urls).toEqual([URL, URL, other, URL]);
    // The reader does not keep a view of a message: a reused buffer does not change what it kept.
    const buffer = Buffer.from(texts[0]!);
    expect(reader.read(buffer)).toBe(true);
    buffer.fill(0x41);
    expect(reader.read(Buffer.from(texts[1]!))).toBe(true);
    expect((calls.at(-1) as Extract<TestEvent, { method: "TestReporter.found" }>).params.url).toBe(URL);
  });
});

let root: string;
let sockDir: string;
let counter = 0;

beforeAll(() => {
  root = tempDir("sg-compact-");
  sockDir = socketDirFor(root);
  writeFileSync(
    join(root, "mixed.test.ts"),
    [
      'import { describe, expect, test } from "bun:test";',
      "let tries = 0;",
      'describe("outer \\"quoted\\" é", () => {',
      '  describe("inner", () => {',
      '    test("a\\tb back\\\\slash", () => expect(1).toBe(1));',
      '    test.skip("skipped", () => {});',
      '    test.todo("to do");',
      "  });",
      '  test("flaky", () => { tries += 1; expect(tries).toBe(2); });',
      '  test("fails", () => { throw new Error("boom ✗"); });',
      "});",
      'test("日本語 😀", () => {});',
      'test.each([1, 2])("each %p", (n) => expect(n).toBe(n));',
      "",
    ].join("\n"),
  );
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/**
 * A unix socket at `path` that forwards a connection to `target` both ways
 * and records the bytes sent towards `target`.
 */
async function recordingProxy(path: string, target: string) {
  const recorded: Buffer[] = [];
  const server = netServer((client) => {
    const upstream = netConnect(target);
    client.on("data", (data) => {
      recorded.push(Buffer.from(data));
      upstream.write(data);
    });
    upstream.on("data", (data) => client.write(data));
    client.on("end", () => upstream.end());
    upstream.on("end", () => client.end());
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  server.listen(path);
  await once(server, "listening");
  return { recorded, close: () => server.close() };
}

/**
 * Runs the fixture in a real child with the shard preload (so the barrier
 * proves every event arrived), through a proxy that records its bytes:
 * the channel's reading (the reader, and `onEvent` for the rest) and the
 * parser's reading of the same bytes.
 */
async function runFixture() {
  counter += 1;
  const socketPath = socketPathFor(sockDir, counter);
  const model = new TestEventModel({ root, now: () => 0 });
  const journalPath = join(root, `run-${counter}.events.jsonl`);
  const journal = await openJournal(journalPath);
  const sinkCalls = { found: 0, start: 0, end: 0 };
  // The marks and count file the runner gives every shard: the preload waits for the runner's
  // end-of-run acknowledgement there, so the barrier's reply arrives before the child exits.
  const marksPath = join(root, `run-${counter}.marks`);
  prepareStartCount(marksPath);
  const channel = listenForTestEvents({
    socketPath,
    connectTimeoutMs: 10_000,
    onEndOfRun: () => acknowledgeEndOfRun(marksPath),
    onEvent: (event, message) => {
      model.apply(event);
      journal.append(event, message);
    },
    sink: {
      found: (id, url, line, name, type, parentId, message) => {
        sinkCalls.found += 1;
        model.found(id, url, line, name, type, parentId);
        journal.appendLine(message);
      },
      start: (id, message) => {
        sinkCalls.start += 1;
        model.start(id);
        journal.appendLine(message);
      },
      end: (id, status, elapsed, message) => {
        sinkCalls.end += 1;
        model.end(id, status, elapsed);
        journal.appendLine(message);
      },
    } satisfies CompactSink,
  });
  const proxyPath = `${socketPath}.proxy`;
  const proxy = await recordingProxy(proxyPath, socketPath);
  const child = spawn(
    BUN,
    [
      `--inspect-wait=unix:${proxyPath}`,
      "test",
      "--preload",
      SHARD_PRELOAD,
      "--retry",
      "1",
      join(root, "mixed.test.ts"),
    ],
    {
      cwd: root,
      env: { ...process.env, SHARDGUARD_YIELD: "1", SHARDGUARD_MARKS: marksPath },
      stdio: "ignore",
    },
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await channel.ready;
  await exited;
  await channel.closed;
  channel.close();
  proxy.close();
  await journal.close();
  const stats = channel.stats();
  // The same bytes, every message through the parser alone, into a journal of its own.
  const parsedEvents: TestEvent[] = [];
  const parserJournalPath = join(root, `run-${counter}.parser.events.jsonl`);
  const parserJournal = await openJournal(parserJournalPath);
  const parse = (text: string) => {
    const result = parseInspectorMessage(text);
    if (result.kind !== "event") return;
    parsedEvents.push(result.event);
    parserJournal.append(result.event);
  };
  const frames = new FrameReader(
    (body) => parse(capJsonStrings(body)),
    parse,
    () => {},
  );
  for (const chunk of proxy.recorded) frames.push(chunk);
  await parserJournal.close();
  return { model, journalPath, stats, sinkCalls, parsedEvents, parserJournalPath };
}

/** A test's state without what differs from run to run (Bun's elapsed times, the clock). */
const stable = (model: TestEventModel) =>
  testStates(model).map((t) => ({
    id: t.id,
    fullName: t.fullName,
    file: t.file,
    line: t.line,
    phase: t.phase,
    status: t.status,
    attempts: t.attempts,
    failure: t.failure?.type,
    errors: t.errors.length,
    flaky: t.flaky,
  }));
const journalLines = (path: string) =>
  readFileSync(path, "utf8")
    .trimEnd()
    .split("\n")
    .map((line) => line.replace(/"elapsed":\d+/, '"elapsed":0'));

describe("a real bun child: the channel's reading and the parser's give the same model and journal", () => {
  test("describes, escapes, non-ASCII, skip, todo, a retried flaky test, a failure, test.each", async () => {
    const run = await runFixture();
    expect(run.stats.flushed).toBe(true);
    expect([run.stats.malformed, run.stats.invalid, run.stats.handlerErrors]).toEqual([0, 0, 0]);
    expect(run.stats.events).toBe(run.parsedEvents.length);
    // The reader took what it could: every start and end, and the founds without an escape.
    // Starts: the escaped one, flaky and fails twice each (--retry 1), 日本語, each 1 and 2.
    expect(run.sinkCalls.start).toBe(8);
    // Ends: one per test, skip and todo included.
    expect(run.sinkCalls.end).toBe(8);
    expect(run.sinkCalls.found).toBe(8); // 10 tests and describes found, 2 with an escape in the name
    const viaParser = TestEventModel.fromEvents(run.parsedEvents, { root, now: () => 0 });
    expect(stable(run.model)).toEqual(stable(viaParser));
    const flaky = testStates(run.model).find((t) => t.name === "flaky")!;
    expect([flaky.status, flaky.attempts, flaky.flaky]).toEqual(["passed", 2, true]);
    expect(testStates(run.model).find((t) => t.name === "fails")!.failure?.message).toContain("boom ✗");
    expect(journalLines(run.journalPath)).toEqual(journalLines(run.parserJournalPath));
    const replayed = TestEventModel.fromEvents(await readJournal(run.journalPath), { root, now: () => 0 });
    expect(stable(replayed)).toEqual(stable(run.model));
  }, 30_000);

  test("a sink that throws is contained and counted; the stream stays in step", async () => {
    counter += 1;
    const socketPath = socketPathFor(sockDir, counter);
    const seen: string[] = [];
    const channel = listenForTestEvents({
      socketPath,
      connectTimeoutMs: 5_000,
      onEvent: (event) => seen.push(event.method),
      sink: {
        found: () => {
          throw new Error("consumer bug");
        },
        start: (id) => seen.push(`start ${id}`),
        end: (id, status) => seen.push(`end ${id} ${status}`),
      },
    });
    const frames = [
      foundText(`"id":1,"url":"${URL}","line":2,"name":"t","type":"test"`),
      '{"method":"TestReporter.start","params":{"id":1}}',
      '{"method":"LifecycleReporter.error","params":{"message":"boom"}}',
      '{"method":"TestReporter.end","params":{"id":1,"status":"fail","elapsed":3}}',
    ];
    const socket = netConnect(socketPath, () => socket.end(Buffer.concat(frames.map((f) => encodeFrame(f)))));
    socket.on("data", () => {});
    await channel.ready;
    await channel.closed;
    channel.close();
    expect(seen).toEqual(["start 1", "LifecycleReporter.error", "end 1 fail"]);
    const stats = channel.stats();
    expect([stats.events, stats.handlerErrors]).toEqual([4, 1]);
  });
});

describe("read batching (a busy stream's reads pause for a moment)", () => {
  test("a peer that trickles 1,200 events, then bursts the rest " +
    "and dies at once: reading paused, and every event arrives", async () => {
    counter += 1;
    const socketPath = socketPathFor(sockDir, counter);
    const model = new TestEventModel({ root: "/r", now: () => 0 });
    const channel = listenForAllEvents({ socketPath, connectTimeoutMs: 5_000, onEvent: (event) => model.apply(event) });
    const frames: Buffer[] = [];
    const tests = 1_500;
    for (let id = 1; id <= tests; id++)
      frames.push(encodeFrame(foundText(`"id":${id},"url":"${URL}","line":2,"name":"t${id}","type":"test"`)));
    for (let id = 1; id <= tests; id++) {
      frames.push(encodeFrame(`{"method":"TestReporter.start","params":{"id":${id}}}`));
      frames.push(encodeFrame(`{"method":"TestReporter.end","params":{"id":${id},"status":"pass","elapsed":1}}`));
    }
    const framesPath = join(root, `frames-${counter}`);
    const trickled = 1_200; // one small write per frame, past the 1,000 events after which reads pause
    writeFileSync(framesPath, Buffer.concat(frames));
    const sender = [
      `const frames = require("fs").readFileSync(${JSON.stringify(framesPath)});`,
      "const ends = []; for (let at = 0; at < frames.length; ) { at += 4 + frames.readUInt32BE(at); ends.push(at); }",
      `const socket = require("net").connect(${JSON.stringify(socketPath)}, async () => {`,
      // Past the 1,000th event, a timer between writes: each read is one small frame, so reading pauses.
      `  for (let i = 0; i < ${trickled}; i++) { socket.write(frames.subarray(i ? ends[i - 1] : 0, ends[i])); ` +
        `await new Promise((r) => (i < 1000 ? setImmediate(r) : setTimeout(r, i % 100 === 0 ? 5 : 0))); }`,
      `  socket.write(frames.subarray(ends[${trickled - 1}]), () => process.exit(0));`,
      "});",
      'socket.on("data", () => {});',
    ].join("\n");
    const child = spawn(BUN, ["-e", sender], { stdio: "ignore" });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    await channel.ready;
    await exited;
    await channel.closed;
    channel.close();
    expect(channel.stats().events).toBe(3 * tests);
    expect(channel.stats().readPauses).toBeGreaterThan(0);
    expect(testStates(model).filter((t) => t.status === "passed").length).toBe(tests);
  }, 30_000);
});
