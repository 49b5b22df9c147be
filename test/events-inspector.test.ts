/**
 * The inspector event channel against REAL `bun --inspect-wait=unix:`
 * children running fixture test files written into a temp dir: the test
 * listens first (listenForTestEvents), then spawns the child, which dials
 * in. Each child is spawned detached (its own process group) so a test can
 * kill the whole group.
 *
 * Bun drops the last events of a run now and then (the process exits before
 * the socket queue drains; docs/bun-behaviour.md), so every fixture ends with a "tail"
 * test whose end the assertions do not require — only that it never turns
 * into anything but passed or unfinished.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tempDir } from "./helpers/cli.ts";
import { connect as netConnect } from "node:net";
import { encodeFrame } from "../runner/events/frames.ts";
import { SHARD_PRELOAD } from "../runner/exec/bun-command.ts";
import { acknowledgeEndOfRun, prepareStartCount } from "../runner/exec/marks.ts";
import { channelNotes, InspectorConnectError, type EventChannel } from "../runner/events/inspector.ts";
import { listenForAllEvents } from "./helpers/event-channel.ts";
import {
  MAX_SOCKET_PATH_BYTES,
  socketDirFor,
  socketPathFor,
  SocketPathTooLongError,
} from "../runner/events/socket-dir.ts";
import type { TestEvent } from "../runner/events/wire.ts";
import { openJournal, readJournal } from "../runner/events/journal.ts";
import { TestEventModel } from "../runner/events/test-model.ts";
import { foundCount, testStates, type TestState } from "./helpers/model-states.ts";

const BUN = process.execPath;
let root = "";
let sockDir = "";
const children = new Set<ChildProcess>();

const FIXTURES: Record<string, string> = {
  "main.test.ts": `
import { describe, expect, test } from "bun:test";
const pause = () => Bun.sleep(50);
describe("outer", () => {
  describe("inner", () => {
    test("passes", async () => { await pause(); expect(1).toBe(1); });
  });
  let tries = 0;
  test("flaky", async () => { await pause(); tries += 1; expect(tries).toBe(2); });
  test("fails", async () => { await pause(); expect("a").toBe("b"); });
  test.skip("skipped", () => {});
  test.todo("todo");
});
test("tail", async () => { await pause(); });
`,
  "spin.test.ts": `
import { test } from "bun:test";
test("one", async () => { await Bun.sleep(50); });
test("two", () => { while (true) {} });
test("three", () => {});
`,
  "bun-timeout.test.ts": `
import { test } from "bun:test";
test("too slow", async () => { await Bun.sleep(1000); });
test("tail", async () => { await Bun.sleep(20); });
`,
  "top-level-throw.test.ts": `
import { test } from "bun:test";
test("never runs", () => {});
throw new Error("top level boom");
`,
  "missing-import.test.ts": `
import { nothing } from "./does-not-exist.ts";
import { test } from "bun:test";
test("never loads", () => { void nothing; });
`,
  "later.test.ts": `
import { test } from "bun:test";
test("later", async () => { await Bun.sleep(50); });
test("tail", async () => { await Bun.sleep(100); });
`,
  "short-flaky.test.ts": `
import { expect, test } from "bun:test";
import { tempDir } from "./helpers/cli.ts";
let attempt = 0;
test("flaky", () => { attempt += 1; expect(attempt).toBe(2); });
`,
  "serve-tcp.ts": `
Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("x") });
setInterval(() => {}, 1000);
`,
};

beforeAll(() => {
  root = tempDir("sg-events-");
  for (const [name, text] of Object.entries(FIXTURES)) writeFileSync(join(root, name), text);
  sockDir = socketDirFor(join(root, "run"));
});

afterAll(() => {
  for (const child of children) killGroup(child);
  rmSync(root, { recursive: true, force: true });
});

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

interface Shard {
  child: ChildProcess;
  pid: number;
  socketPath: string;
  exited: Promise<{ code: number | null; signal: string | null }>;
  events: TestEvent[];
  model: TestEventModel;
  logPath: string;
  channel: EventChannel;
}

let shardCounter = 0;

/**
 * Listens on a fresh socket, then spawns `bun --inspect-wait=unix:<socket>
 * test <files>` in its own process group; `dialPath` makes the child dial
 * somewhere else (a child that never dials us).
 */
function spawnShard(
  files: string[],
  bunArgs: string[] = [],
  options: {
    onEvent?: (event: TestEvent) => void;
    connectTimeoutMs?: number;
    dialPath?: string;
    preload?: boolean;
  } = {},
): Shard {
  shardCounter += 1;
  const socketPath = socketPathFor(sockDir, shardCounter);
  const events: TestEvent[] = [];
  const model = new TestEventModel({ root });
  // With the preload, the runner's part of the end-of-run barrier: its acknowledgement in the count file.
  const marks = join(root, `shard-${shardCounter}.marks`);
  if (options.preload) prepareStartCount(marks);
  const channel = listenForAllEvents({
    socketPath,
    connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
    onEvent: (event) => {
      events.push(event);
      model.apply(event);
      options.onEvent?.(event);
    },
    ...(options.preload ? { onEndOfRun: () => acknowledgeEndOfRun(marks) } : {}),
  });
  const logPath = join(root, `shard-${shardCounter}.log`);
  const log = openSync(logPath, "w");
  const preload = options.preload ? ["--preload", SHARD_PRELOAD] : [];
  const child = spawn(
    BUN,
    [
      `--inspect-wait=unix:${options.dialPath ?? socketPath}`,
      "test",
      ...preload,
      ...bunArgs,
      ...files.map((f) => join(root, f)),
    ],
    {
      cwd: root,
      env: {
        ...process.env,
        SHARDGUARD_YIELD: options.preload ? "1" : "0",
        ...(options.preload ? { SHARDGUARD_MARKS: marks } : {}),
      },
      detached: true,
      stdio: ["ignore", log, log],
    },
  );
  closeSync(log);
  children.add(child);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  if (child.pid === undefined) throw new Error("spawn failed");
  return { child, pid: child.pid, socketPath, exited, events, model, logPath, channel };
}

/** The shard's channel once the child dialed in and was released. */
async function connect(shard: Shard): Promise<EventChannel> {
  await shard.channel.ready;
  return shard.channel;
}

function byName(states: TestState[], fullName: string): TestState {
  const state = states.find((t) => t.fullName === fullName);
  if (!state) throw new Error(`no test ${fullName} in ${states.map((t) => t.fullName).join(", ")}`);
  return state;
}

/** The tail test: its end may be lost, but it must never be anything but passed or unfinished. */
function expectPassedOrUnfinished(state: TestState): void {
  if (state.phase === "ended") expect(state.status).toBe("passed");
  else expect(state.status).toBeUndefined();
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (condition()) return true;
    await Bun.sleep(10);
  }
  return condition();
}

// ---------------------------------------------------------------------------
// /proc helpers for the "no TCP listener" check (Linux only)
// ---------------------------------------------------------------------------

/** Inodes of the sockets the process holds open, from /proc/<pid>/fd. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target = "";
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match?.[1]) inodes.add(match[1]);
  }
  return inodes;
}

/** Inodes of TCP sockets in LISTEN state (st 0A) in the process's network namespace. */
function listeningTcpInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, "utf8");
    } catch {
      continue; // e.g. no IPv6
    }
    for (const line of text.split("\n").slice(1)) {
      const columns = line.trim().split(/\s+/);
      if (columns[3] === "0A" && columns[9]) inodes.add(columns[9]);
    }
  }
  return inodes;
}

/** TCP listeners owned by the process: listening inodes that are among its fds. */
function tcpListenersOf(pid: number): string[] {
  const mine = socketInodes(pid);
  return [...listeningTcpInodes(pid)].filter((inode) => mine.has(inode));
}

/** Inodes of the unix sockets bound to `path`, from /proc/<pid>/net/unix. */
function unixSocketInodes(pid: number, path: string): string[] {
  return readFileSync(`/proc/${pid}/net/unix`, "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((columns) => columns[7] === path && columns[6] !== undefined)
    .map((columns) => columns[6] as string);
}

// ---------------------------------------------------------------------------

describe("listenForTestEvents with real bun children", () => {
  test(
    "pass / fail / skip / todo / retry-flaky / nested " + "describes build the expected model; journal round-trips",
    async () => {
      const journal = await openJournal(join(root, "main.events.jsonl"));
      const started = performance.now();
      const shard = spawnShard(["main.test.ts"], ["--retry", "1"], { onEvent: (event) => journal.append(event) });
      const channel = await connect(shard);
      const connectMs = performance.now() - started;
      await channel.closed;
      await journal.close();
      const exit = await shard.exited;
      expect(exit.code).toBe(1);
      expect(connectMs).toBeLessThan(5_000);

      const stats = channel.stats();
      expect(stats.closedBy).toBe("peer");
      expect(stats.refused).toBe(0);
      expect(stats.requestError).toBeNull();
      expect(stats.malformed).toBe(0);
      expect(stats.invalid).toBe(0);
      expect(stats.handlerErrors).toBe(0);

      const tests = testStates(shard.model);
      expect(tests.map((t) => t.fullName).sort()).toEqual(
        ["outer > inner > passes", "outer > flaky", "outer > fails", "outer > skipped", "outer > todo", "tail"].sort(),
      );
      expect(foundCount(shard.model, "main.test.ts")).toBe(6);

      const passes = byName(tests, "outer > inner > passes");
      expect(passes.status).toBe("passed");
      expect(passes.attempts).toBe(1);
      expect(passes.file).toBe("main.test.ts");
      expect(passes.line).toBe(6);
      expect(passes.describePath).toEqual(["outer", "inner"]);
      expect(passes.durationMs).toBeGreaterThanOrEqual(40);

      const flaky = byName(tests, "outer > flaky");
      expect(flaky.status).toBe("passed");
      expect(flaky.flaky).toBe(true);
      expect(flaky.attempts).toBe(2);
      expect(flaky.attemptFailures).toHaveLength(1);
      expect(flaky.attemptFailures[0]?.message).toContain("Expected: 2");

      const fails = byName(tests, "outer > fails");
      expect(fails.status).toBe("failed");
      expect(fails.attempts).toBe(2);
      expect(fails.attemptFailures).toHaveLength(1);
      expect(fails.failure?.message).toContain('Expected: "b"');
      expect(fails.failure?.details).toContain("main.test.ts:10:");

      const skipped = byName(tests, "outer > skipped");
      expect([skipped.status, skipped.attempts]).toEqual(["skipped", 0]);
      const todo = byName(tests, "outer > todo");
      expect([todo.status, todo.attempts]).toEqual(["todo", 0]);
      expectPassedOrUnfinished(byName(tests, "tail"));
      expect(shard.model.errorsOutsideTests()).toEqual([]);

      // The journal holds the same events and rebuilds the same verdicts.
      const replayed = testStates(
        TestEventModel.fromEvents(await readJournal(join(root, "main.events.jsonl")), { root }),
      );
      expect(replayed.map((t) => [t.fullName, t.phase, t.status, t.attempts, t.flaky])).toEqual(
        tests.map((t) => [t.fullName, t.phase, t.status, t.attempts, t.flaky]),
      );
    },
  );

  test.skipIf(process.platform !== "linux")(
    "a spinning test killed from outside: 1 passed, 2 running, 3 never started; the child has no TCP listener",
    async () => {
      const shard = spawnShard(["spin.test.ts"]);
      const spawnedAt = performance.now();
      const channel = await connect(shard);
      const spinning = await waitFor(() => shard.model.running()?.name === "two", 5_000);
      expect(spinning).toBe(true);

      // While it spins: the socket path is bound by us (the runner side
      // listens, proving the fd scan sees it), the child holds a socket
      // connected to it and listens on no TCP port.
      const ours = socketInodes(process.pid);
      expect(unixSocketInodes(process.pid, shard.socketPath).some((inode) => ours.has(inode))).toBe(true);
      expect(socketInodes(shard.pid).size).toBeGreaterThan(0);
      expect(tcpListenersOf(shard.pid)).toEqual([]);

      await Bun.sleep(Math.max(0, 1_500 - (performance.now() - spawnedAt)));
      process.kill(-shard.pid, "SIGKILL");
      const exit = await shard.exited;
      expect(exit.signal).toBe("SIGKILL");
      await channel.closed;
      expect(channel.stats().closedBy).toBe("peer");

      const [one, two, three] = testStates(shard.model);
      expect(one?.name).toBe("one");
      expect(one?.status).toBe("passed");
      expect(two?.name).toBe("two");
      expect(two?.phase).toBe("running");
      expect(two?.status).toBeUndefined();
      expect(two?.attempts).toBe(1);
      expect(two?.startedAtMs).toBeNumber();
      expect(three?.name).toBe("three");
      expect(three?.phase).toBe("found");
      expect(three?.attempts).toBe(0);
      expect(shard.model.running()?.name).toBe("two");
    },
    10_000,
  );

  test.skipIf(process.platform !== "linux")(
    "the TCP listener check is not vacuous: it sees Bun.serve on 127.0.0.1",
    async () => {
      const child = spawn(BUN, [join(root, "serve-tcp.ts")], { detached: true, stdio: "ignore" });
      children.add(child);
      const pid = child.pid;
      if (pid === undefined) throw new Error("spawn failed");
      try {
        expect(await waitFor(() => tcpListenersOf(pid).length > 0, 5_000)).toBe(true);
      } finally {
        killGroup(child);
      }
    },
  );

  test("Bun's own --timeout: end status timeout → failed with failure type timeout, no error event", async () => {
    const shard = spawnShard(["bun-timeout.test.ts"], ["--timeout", "150"]);
    const channel = await connect(shard);
    await channel.closed;
    await shard.exited;
    const slow = byName(testStates(shard.model), "too slow");
    expect(slow.bunStatus).toBe("timeout");
    expect(slow.status).toBe("failed");
    expect(slow.failure?.type).toBe("timeout");
    expect(slow.errors).toEqual([]);
    expect(slow.durationMs).toBeGreaterThanOrEqual(140);
    expect(slow.durationMs).toBeLessThan(1000);
    expectPassedOrUnfinished(byName(testStates(shard.model), "tail"));
  });

  test(
    "load errors (Bun 1.4.4): a top-level throw sends an " + "error outside tests; a missing import sends nothing",
    async () => {
      const shard = spawnShard(["top-level-throw.test.ts", "missing-import.test.ts", "later.test.ts"]);
      const channel = await connect(shard);
      await channel.closed;
      await shard.exited;
      const model = shard.model;

      const outside = model.errorsOutsideTests();
      expect(outside.map((e) => [e.file, e.message])).toEqual([["top-level-throw.test.ts", "top level boom"]]);
      expect(outside[0]?.locations[0]).toEqual({ file: "top-level-throw.test.ts", line: 4, column: 7 });

      // The throwing file's tests were registered, then never started.
      const neverRuns = byName(testStates(model), "never runs");
      expect(neverRuns.phase).toBe("found");
      expect(foundCount(model, "top-level-throw.test.ts")).toBe(1);

      // An unresolvable import produces no event at all: no found, no error.
      expect(foundCount(model, "missing-import.test.ts")).toBe(0);
      expect(shard.events.some((e) => JSON.stringify(e).includes("does-not-exist"))).toBe(false);
      // ...while Bun's console output does report it.
      expect(readFileSync(shard.logPath, "utf8")).toContain("Cannot find module './does-not-exist.ts'");

      expect(byName(testStates(model), "later").status).toBe("passed");
    },
  );
});

describe("the end-of-run barrier with the shard preload", () => {
  test(
    "short runs, four at a time: every run reaches the " + "barrier and every event arrives, the retry included",
    async () => {
      for (let batch = 0; batch < 3; batch++) {
        const shards = Array.from({ length: 4 }, () =>
          spawnShard(["short-flaky.test.ts"], ["--retry", "1"], { preload: true }),
        );
        for (const shard of shards) {
          await shard.channel.ready;
          await shard.channel.closed;
          expect((await shard.exited).code).toBe(0);
          const stats = shard.channel.stats();
          expect(stats.flushed).toBe(true);
          expect(stats.requestError).toBeNull();
          expect(shard.events.map((e) => e.method)).toEqual([
            "TestReporter.found",
            "TestReporter.start",
            "LifecycleReporter.error",
            "TestReporter.start",
            "TestReporter.end",
          ]);
          const flaky = byName(testStates(shard.model), "flaky");
          expect([flaky.status, flaky.attempts, flaky.flaky]).toEqual(["passed", 2, true]);
          shard.channel.close();
        }
      }
    },
  );

  test("without the runner's acknowledgement the preload waits at most 5 s, then the child ends", async () => {
    const socketPath = socketPathFor(sockDir, "no-ack");
    // A listener that releases the child but never runs the barrier.
    const server = Bun.listen<undefined>({
      unix: socketPath,
      socket: {
        open(socket) {
          const requests = ["TestReporter.enable", "LifecycleReporter.enable", "Inspector.initialized"];
          socket.write(Buffer.concat(requests.map((method, i) => encodeFrame(JSON.stringify({ id: i + 1, method })))));
        },
        data() {},
      },
    });
    try {
      const marks = join(root, "no-ack.marks");
      prepareStartCount(marks);
      const started = performance.now();
      const child = spawn(
        BUN,
        [
          `--inspect-wait=unix:${socketPath}`,
          "test",
          "--preload",
          SHARD_PRELOAD,
          join(root, "short-flaky.test.ts"),
          "--retry",
          "1",
        ],
        {
          cwd: root,
          stdio: "ignore",
          env: { ...process.env, SHARDGUARD_YIELD: "1", SHARDGUARD_MARKS: marks },
        },
      );
      children.add(child);
      const code = await new Promise((resolve) => child.once("exit", resolve));
      children.delete(child);
      expect(code).toBe(0);
      const ms = performance.now() - started;
      expect(ms).toBeGreaterThanOrEqual(5_000);
      expect(ms).toBeLessThan(8_000);
    } finally {
      server.stop(true);
    }
  }, 15_000);
});

describe("listenForTestEvents failure paths", () => {
  test(
    "a child that never dials: ready rejects at the deadline " +
      "naming the socket and the wait; no socket file is left",
    async () => {
      const elsewhere = socketPathFor(sockDir, "elsewhere");
      const started = performance.now();
      const shard = spawnShard(["later.test.ts"], [], { connectTimeoutMs: 300, dialPath: elsewhere });
      try {
        const error = await shard.channel.ready.then(
          () => undefined,
          (e: unknown) => e,
        );
        const waited = performance.now() - started;
        expect(error).toBeInstanceOf(InspectorConnectError);
        const connectError = error as InspectorConnectError;
        expect(connectError.reason).toBe("timeout");
        expect(connectError.socketPath).toBe(shard.socketPath);
        expect(connectError.message).toContain(shard.socketPath);
        expect(connectError.message).toContain("never connected");
        expect(connectError.message).toContain("timeout 300 ms");
        expect(connectError.waitedMs).toBeGreaterThanOrEqual(295);
        expect(waited).toBeGreaterThanOrEqual(295);
        expect(waited).toBeLessThan(2_000);
        await shard.channel.closed;
        expect(existsSync(shard.socketPath)).toBe(false);
        // The child still waits for a debugger: with --inspect-wait it never runs a test alone.
        expect([shard.child.exitCode, shard.child.signalCode]).toEqual([null, null]);
        expect(shard.events).toEqual([]);
      } finally {
        process.kill(-shard.pid, "SIGKILL");
        await shard.exited;
      }
    },
  );

  test(
    "a socket directory removed meanwhile (a test can: it " +
      "is in its argv) is made again, private, by socketPathFor",
    () => {
      const dir = socketDirFor(join(root, "run-removed"));
      rmSync(dir, { recursive: true, force: true });
      const path = socketPathFor(dir, "again");
      expect(path).toBe(join(dir, "again.sock"));
      const stat = lstatSync(dir);
      expect(stat.isDirectory()).toBe(true);
      expect(stat.mode & 0o777).toBe(0o700);
    },
  );

  test(
    "a leftover socket file (its owner died): listening " + "fails with reason listen; socketPathFor removes it",
    async () => {
      const path = socketPathFor(sockDir, "stale");
      const owner = spawn(
        BUN,
        ["-e", `Bun.listen({ unix: ${JSON.stringify(path)}, socket: { data() {} } }); setInterval(() => {}, 1000);`],
        {
          detached: true,
          stdio: "ignore",
        },
      );
      children.add(owner);
      expect(await waitFor(() => existsSync(path), 5_000)).toBe(true);
      killGroup(owner);
      await new Promise((resolve) => owner.once("exit", resolve));
      expect(statSync(path).isSocket()).toBe(true);

      let error: unknown;
      try {
        listenForAllEvents({ socketPath: path, connectTimeoutMs: 200, onEvent: () => {} });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InspectorConnectError);
      expect((error as InspectorConnectError).reason).toBe("listen");
      expect((error as InspectorConnectError).message).toContain(path);

      expect(socketPathFor(sockDir, "stale")).toBe(path);
      expect(existsSync(path)).toBe(false);
      const channel = listenForAllEvents({ socketPath: path, connectTimeoutMs: 5_000, onEvent: () => {} });
      channel.close();
      await channel.closed;
      expect(existsSync(path)).toBe(false);
    },
  );

  test("an abort signal ends the wait at once", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const channel = listenForAllEvents({
      socketPath: socketPathFor(sockDir, "aborted"),
      connectTimeoutMs: 5_000,
      onEvent: () => {},
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    const error = (await channel.ready.catch((e: unknown) => e)) as InspectorConnectError;
    expect(error.reason).toBe("aborted");
    expect(performance.now() - started).toBeLessThan(1_000);
    await channel.closed;
  });

  test("close() on an open channel resolves closed; the child keeps running until killed", async () => {
    const shard = spawnShard(["spin.test.ts"]);
    const channel = await connect(shard);
    channel.close();
    channel.close();
    await channel.closed;
    expect(channel.stats().closedBy).toBe("local");
    expect(existsSync(shard.socketPath)).toBe(false);
    await Bun.sleep(100);
    expect([shard.child.exitCode, shard.child.signalCode]).toEqual([null, null]);
    process.kill(-shard.pid, "SIGKILL");
    await shard.exited;
  });
});

describe("listenForTestEvents against fake children (a raw unix socket client speaking Bun's framing)", () => {
  /**
   * Dials `socketPath` like a Bun child: answers each request with
   * `{"result":{},"id":N}` (an error reply when `refuse`); after
   * `Inspector.initialized` writes `afterInit`, one write each, a few ms
   * apart so they arrive as separate reads, then hangs up unless `stayOpen`.
   */
  function fakeChild(socketPath: string, options: { afterInit?: Buffer[]; refuse?: boolean; stayOpen?: boolean } = {}) {
    const socket = netConnect(socketPath);
    const requests: string[] = [];
    let buffered = Buffer.alloc(0);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    const afterInit = async () => {
      for (const piece of options.afterInit ?? []) {
        socket.write(piece);
        await Bun.sleep(5);
      }
      if (!options.stayOpen) socket.end();
    };
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      let released = false;
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
        const length = buffered.readUInt32BE(0);
        const { id, method } = JSON.parse(buffered.subarray(4, 4 + length).toString("utf8")) as {
          id: number;
          method: string;
        };
        buffered = buffered.subarray(4 + length);
        requests.push(method);
        if (socket.writableEnded) continue;
        socket.write(
          encodeFrame(JSON.stringify(options.refuse ? { id, error: { message: `no ${method}` } } : { result: {}, id })),
        );
        if (method === "Inspector.initialized") released = true;
      }
      // After the replies to everything in this read (the runner pipelines its requests).
      if (released) void afterInit();
    });
    return { socket, requests, closed };
  }

  const frame = (text: string) => encodeFrame(text);

  test("malformed, invalid and unknown messages are counted, not thrown; a throwing onEvent is contained", async () => {
    const socketPath = socketPathFor(sockDir, "fake-ok");
    const received: TestEvent[] = [];
    const channel = listenForAllEvents({
      socketPath,
      connectTimeoutMs: 2_000,
      onEvent: (event) => {
        received.push(event);
        if (event.method === "TestReporter.found") throw new Error("consumer bug");
      },
    });
    const fake = fakeChild(socketPath, {
      afterInit: [
        frame("this is not json"),
        frame('{"method":"TestReporter.start","params":{}}'),
        frame('{"method":"Console.messageAdded","params":{"message":{}}}'),
        frame(
          '{"method":"TestReporter.found","params":{"id":1,"url":"/x/a.test.ts","line":1,"name":"a","type":"test"}}',
        ),
        frame('{"method":"TestReporter.start","params":{"id":1}}'),
      ],
    });
    await channel.ready;
    await channel.closed;
    await fake.closed;
    expect(fake.requests.slice(0, 4)).toEqual([
      "TestReporter.enable",
      "LifecycleReporter.enable",
      "Inspector.initialized",
      "Runtime.evaluate",
    ]);
    expect(received.map((e) => e.method)).toEqual(["TestReporter.found", "TestReporter.start"]);
    const stats = channel.stats();
    expect([stats.events, stats.malformed, stats.invalid, stats.ignored, stats.handlerErrors]).toEqual([2, 1, 1, 1, 1]);
    // Never dropped without a word: the shard's notes name them (and the runner logs them once).
    expect(stats.firstInvalid).toBe(
      "TestReporter.start: params.id: Invalid input: expected number, received undefined",
    );
    expect(channelNotes(stats)).toEqual([
      `1 inspector event did not match the event schema and was not applied (first: ${stats.firstInvalid})`,
      "1 inspector message was not JSON",
    ]);
    expect(stats.closedBy).toBe("peer");
    expect(stats.dialMs).toBeGreaterThan(0);
    expect(stats.connectMs).toBeGreaterThan(0);
    channel.close();
  });

  test(
    "frames split across reads: a non-ASCII name and a 200 " +
      "KiB message arrive whole, the message cut to its 64 KiB tail",
    async () => {
      const socketPath = socketPathFor(sockDir, "fake-split");
      const received: TestEvent[] = [];
      const channel = listenForAllEvents({
        socketPath,
        connectTimeoutMs: 2_000,
        onEvent: (event) => received.push(event),
      });
      const name = "héllo wörld ✓ 日本語 😀";
      const found = frame(
        JSON.stringify({
          method: "TestReporter.found",
          params: { id: 7, url: "/x/ü.test.ts", line: 3, name, type: "test" },
        }),
      );
      const message = `${"é".repeat(100 * 1024)}THE-TAIL`;
      const error = frame(
        JSON.stringify({
          method: "LifecycleReporter.error",
          params: { message, name: "Error", urls: [], lineColumns: [] },
        }),
      );
      // Cut inside the header (2 bytes), inside a multi-byte character of the
      // name, and through the long message several times.
      const nameAt = found.indexOf(Buffer.from("ö")) + 1;
      const pieces = [
        found.subarray(0, 2),
        found.subarray(2, nameAt),
        found.subarray(nameAt),
        error.subarray(0, 3),
        error.subarray(3, 70_000),
        error.subarray(70_000, 150_001),
        error.subarray(150_001),
      ];
      const fake = fakeChild(socketPath, { afterInit: pieces });
      await channel.ready;
      await channel.closed;
      await fake.closed;
      expect(received.map((e) => e.method)).toEqual(["TestReporter.found", "LifecycleReporter.error"]);
      expect(received[0]?.params).toMatchObject({ id: 7, name, url: "/x/ü.test.ts" });
      const kept = (received[1] as { params: { message: string } }).params.message;
      expect(kept.startsWith("[shardguard: first ")).toBe(true);
      expect(kept.endsWith("ééTHE-TAIL")).toBe(true);
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(64 * 1024 + 100);
      expect(channel.stats().malformed).toBe(0);
      channel.close();
    },
  );

  test(
    "a 3 MiB message (over the 1 MiB whole-frame limit) is streamed " +
      "through the capper: name kept, tail kept, events after it in step",
    async () => {
      const socketPath = socketPathFor(sockDir, "fake-stream");
      const received: TestEvent[] = [];
      const channel = listenForAllEvents({
        socketPath,
        connectTimeoutMs: 2_000,
        onEvent: (event) => received.push(event),
      });
      const message = `${'ü\\"x'.repeat(600 * 1024)}THE-TAIL`;
      const error = frame(
        JSON.stringify({
          method: "LifecycleReporter.error",
          params: { message, name: "TypeÉrror", urls: ["/x/a.test.ts"], lineColumns: [3, 7] },
        }),
      );
      expect(error.length).toBeGreaterThan(3 * 1024 * 1024);
      const pieces: Buffer[] = [];
      for (let at = 0; at < error.length; at += 700_001) pieces.push(error.subarray(at, at + 700_001));
      const fake = fakeChild(socketPath, {
        afterInit: [...pieces, frame('{"method":"TestReporter.start","params":{"id":3}}')],
      });
      await channel.ready;
      await channel.closed;
      await fake.closed;
      expect(received.map((e) => e.method)).toEqual(["LifecycleReporter.error", "TestReporter.start"]);
      const params = (
        received[0] as { params: { message: string; name: string; urls: string[]; lineColumns: number[] } }
      ).params;
      expect([params.name, params.urls, params.lineColumns]).toEqual(["TypeÉrror", ["/x/a.test.ts"], [3, 7]]);
      expect(params.message).toMatch(/^\[shardguard: first \d+ bytes cut; full text in the shard log\]\n/);
      expect(params.message.endsWith('ü\\"xTHE-TAIL')).toBe(true);
      expect(Buffer.byteLength(params.message)).toBeLessThanOrEqual(64 * 1024 + 100);
      expect(channel.stats().malformed).toBe(0);
      channel.close();
    },
  );

  test("a found frame of 40 MiB (its name) is read with the name cut to its tail, never held whole", async () => {
    const socketPath = socketPathFor(sockDir, "fake-40m");
    const received: TestEvent[] = [];
    const channel = listenForAllEvents({
      socketPath,
      connectTimeoutMs: 2_000,
      onEvent: (event) => received.push(event),
    });
    const name = `${"H".repeat(40 * 1024 * 1024)}END`;
    const found = frame(
      JSON.stringify({
        method: "TestReporter.found",
        params: { id: 2, url: "/x/a.test.ts", line: 3, name, type: "test" },
      }),
    );
    expect(found.length).toBeGreaterThan(40 * 1024 * 1024);
    const fake = fakeChild(socketPath, {
      afterInit: [found, frame('{"method":"TestReporter.start","params":{"id":2}}')],
    });
    await channel.ready;
    await channel.closed;
    await fake.closed;
    expect(received.map((e) => e.method)).toEqual(["TestReporter.found", "TestReporter.start"]);
    const params = (received[0] as { params: { id: number; name: string; line: number; type: string } }).params;
    expect([params.id, params.line, params.type]).toEqual([2, 3, "test"]);
    expect(params.name).toMatch(/^\[shardguard: first \d+ bytes cut; full text in the shard log\]\nH+END$/);
    expect(Buffer.byteLength(params.name)).toBeLessThanOrEqual(64 * 1024 + 100);
    expect([channel.stats().oversized, channel.stats().invalid, channel.stats().malformed]).toEqual([0, 0, 0]);
    channel.close();
  });

  test(
    "a frame that cut strings cannot bring under 8 MiB (33 MiB " +
      "of no JSON) is dropped, counted, and the stream stays in step",
    async () => {
      const socketPath = socketPathFor(sockDir, "fake-big");
      const received: TestEvent[] = [];
      const channel = listenForAllEvents({
        socketPath,
        connectTimeoutMs: 2_000,
        onEvent: (event) => received.push(event),
      });
      const huge = Buffer.alloc(4 + 33 * 1024 * 1024, 0x78);
      huge.writeUInt32BE(33 * 1024 * 1024, 0);
      const fake = fakeChild(socketPath, {
        afterInit: [huge, frame('{"method":"TestReporter.start","params":{"id":2}}')],
      });
      await channel.ready;
      await channel.closed;
      await fake.closed;
      expect(channel.stats().oversized).toBe(1);
      expect(received).toEqual([{ method: "TestReporter.start", params: { id: 2 } }]);
      channel.close();
    },
  );

  test("an error reply is recorded, not thrown; the channel stays open and released the child", async () => {
    const socketPath = socketPathFor(sockDir, "fake-refuse");
    const channel = listenForAllEvents({ socketPath, connectTimeoutMs: 2_000, onEvent: () => {} });
    const fake = fakeChild(socketPath, { refuse: true, stayOpen: true });
    await channel.ready;
    expect(await waitFor(() => channel.stats().requestError !== null, 2_000)).toBe(true);
    expect(channel.stats().requestError).toContain("no TestReporter.enable");
    expect(await waitFor(() => fake.requests.includes("Inspector.initialized"), 2_000)).toBe(true);
    fake.socket.end();
    await channel.closed;
    expect(channel.stats().closedBy).toBe("peer");
    channel.close();
  });

  test(
    "one connection only: the socket file is gone once the first is " +
      "accepted, so a second dial finds nothing; the first's events alone arrive",
    async () => {
      const socketPath = socketPathFor(sockDir, "fake-second");
      const received: TestEvent[] = [];
      const noted: string[] = [];
      const channel = listenForAllEvents({
        socketPath,
        connectTimeoutMs: 2_000,
        onEvent: (event) => received.push(event),
        onRefused: (detail) => noted.push(detail),
      });
      const first = fakeChild(socketPath, {
        stayOpen: true,
        afterInit: [frame('{"method":"TestReporter.start","params":{"id":1}}')],
      });
      await channel.ready;
      expect(await waitFor(() => received.length === 1, 2_000)).toBe(true);
      // A descendant of the child that inherited BUN_INSPECT_CONNECT_TO, or an intruder, dials while the first is open.
      expect(existsSync(socketPath)).toBe(false);
      const intruder = netConnect(socketPath);
      const error = await new Promise<NodeJS.ErrnoException>((resolve) => intruder.once("error", resolve));
      expect(error.code).toBe("ENOENT");

      first.socket.end();
      await channel.closed;
      expect(received).toEqual([{ method: "TestReporter.start", params: { id: 1 } }]);
      expect([channel.stats().refused, noted]).toEqual([0, []]);
      channel.close();
      expect(existsSync(socketPath)).toBe(false);
    },
  );
});

describe("socket paths", () => {
  test("socketDirFor creates <runDir>/sock with mode 0700 and repairs a looser mode", () => {
    const runDir = join(root, "run-mode");
    const dir = socketDirFor(runDir);
    expect(dir).toBe(join(runDir, "sock"));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    chmodSync(dir, 0o755);
    expect(socketDirFor(runDir)).toBe(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  test("socketDirFor refuses a non-directory at the socket dir path", () => {
    const runDir = join(root, "run-file");
    mkdirSync(runDir);
    writeFileSync(join(runDir, "sock"), "");
    expect(() => socketDirFor(runDir)).toThrow("is not a directory");
  });

  test("a run dir too deep for unix socket paths falls back to a private dir under os.tmpdir()", () => {
    const deep = join(root, "d".repeat(60), "e".repeat(60));
    const dir = socketDirFor(deep);
    try {
      expect(dir.startsWith(tmpdir())).toBe(true);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(Buffer.byteLength(socketPathFor(dir, 12345))).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a run dir with a space or a colon falls back to a safe private dir (Bun and ws mis-handle those)", () => {
    for (const odd of ["with space", "co:lon"]) {
      const dir = socketDirFor(join(root, odd));
      try {
        expect(dir.startsWith(tmpdir())).toBe(true);
        expect(statSync(dir).mode & 0o777).toBe(0o700);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    expect(() => socketPathFor(join(root, "with space"), 1)).toThrow("characters");
  });

  test("listenForTestEvents refuses a relative or unsafe socket path without trying", () => {
    for (const socketPath of ["rel/1.sock", "/tmp/a b/1.sock", "/tmp/a:b/1.sock"]) {
      let error: unknown;
      try {
        listenForAllEvents({ socketPath, connectTimeoutMs: 5_000, onEvent: () => {} });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InspectorConnectError);
      expect((error as InspectorConnectError).reason).toBe("invalid-path");
      expect(existsSync(socketPath)).toBe(false);
    }
  });

  test("socketPathFor throws a clear error past the byte limit and rejects odd names", () => {
    const deepDir = join(root, "x".repeat(120));
    expect(() => socketPathFor(deepDir, 1)).toThrow(SocketPathTooLongError);
    expect(() => socketPathFor(deepDir, 1)).toThrow(`over the ${MAX_SOCKET_PATH_BYTES}-byte limit`);
    expect(() => socketPathFor(sockDir, "../up")).toThrow("plain file name");
    expect(() => socketPathFor(sockDir, "")).toThrow("plain file name");
    writeFileSync(join(sockDir, "file.sock"), "");
    expect(() => socketPathFor(sockDir, "file")).toThrow("not a socket");
  });
});
