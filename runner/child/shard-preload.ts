/**
 * Preload injected into every shard child (`bun test --preload`); never imported by the runner.
 * It writes marks a kill cannot lose (read by runner/exec/marks.ts), holds and flushes Bun's
 * inspector events, lists leftover descendants and joins the shard's cgroup, all driven by the
 * runner's environment; why each step looks as it does: docs/bun-behaviour.md, "The child preload".
 * Hooks never fail a test. Imports only bun:test and this folder, which the run copies whole.
 */
import { afterAll, beforeEach, jest } from "bun:test";
import { procFilesOf, walkDescendants } from "./proc-reader.ts";
import { mayHaveChildren, pause } from "./no-yield.ts";

// Bun's FileSink (flush() is synchronous): node:fs costs every child its import (docs/bun-behaviour.md, "Speed").
const marksPath = process.env.SHARDGUARD_MARKS;
/** Files of an `--isolate` batch; 1 when not isolated. */
const isolatedFiles = Number.parseInt(process.env.SHARDGUARD_ISOLATE_FILES ?? "", 10) || 1;
const fs = isolatedFiles > 1 && marksPath ? (require("node:fs") as typeof import("node:fs")) : null;
// Bun reruns this preload per file of a batch in a fresh global, so the position lives in a file.
const position = fs && marksPath ? nextPosition(fs, `${marksPath}.seq.${process.pid}`) : 0;
const lastOfBatch = position >= isolatedFiles - 1;
const marks: { write(text: string): unknown; flush(): unknown } | null = !marksPath
  ? null
  : fs
    ? { write: (text: string) => fs.appendFileSync(marksPath, text), flush: () => undefined }
    : marksSink(marksPath);
// "l" per loading file of a batch: one that hangs or exits before its first test is still named.
if (fs) mark("l");

/** The marks file's sink; null when it cannot be opened (no marks: a stricter verdict, never a pass). */
function marksSink(file: string): { write(text: string): unknown; flush(): unknown } | null {
  try {
    return Bun.file(file).writer();
  } catch {
    return null;
  }
}

/** Counts this run in `seqFile` and returns how many came before it (0 on error); the last removes it. */
function nextPosition(files: typeof import("node:fs"), seqFile: string): number {
  try {
    const fd = files.openSync(seqFile, "a");
    try {
      const before = files.fstatSync(fd).size;
      files.writeSync(fd, "x");
      if (before >= isolatedFiles - 1) files.rmSync(seqFile, { force: true });
      return before;
    } finally {
      files.closeSync(fd);
    }
  } catch {
    return 0;
  }
}
// Copies of the constants in runner/exec/marks.ts (nothing of the runner is imported).
const START_COUNT_SUFFIX = ".count";
const COUNT_FILE_BYTES = 12;
const END_ACK = 1;
// Mapped shared: [0] start count, [1] plan-barrier reply, [2] end-of-run ack; null: an "s" per start.
const startCount = marksPath ? mapStartCount(marksPath + START_COUNT_SUFFIX) : null;

/** Maps the runner's count file; null on any error or any other size. */
function mapStartCount(file: string): Uint32Array | null {
  try {
    const bytes = Bun.mmap(file);
    return bytes.byteLength === COUNT_FILE_BYTES
      ? new Uint32Array(bytes.buffer, bytes.byteOffset, COUNT_FILE_BYTES / 4)
      : null;
  } catch {
    return null;
  }
}

// Read-modify-write, so a nested preload sharing the file adds to it.
function countStart(): string {
  if (startCount === null) return "s";
  try {
    startCount[0] = startCount[0]! + 1;
    return "";
  } catch {
    return "s";
  }
}
const flushEvents = process.env.SHARDGUARD_YIELD === "1" || process.env.SHARDGUARD_YIELD === "bail";
// --bail skips the global afterAll, so each file's first test waits for its plan instead.
const bailBarriers = process.env.SHARDGUARD_YIELD === "bail";

// Waits, ms. The ack waits for the runner to read every event before it: long under load.
const FIRST_WAIT_MS = 5;
const ACK_MAX_MS = 5_000;
const ACK_POLL_MS = 0.2;
const HOOK_SLACK_MS = 5_000;
// Runs inside a test's beforeEach: must stay under Bun's hook timeout.
const PLAN_MAX_MS = 1_000;

/** A promise slot shared with the runner via `Runtime.evaluate` (runner/events/barrier.ts); either side makes it. */
type Slot = { promise: Promise<unknown>; resolve: (value?: unknown) => void };
// Taken at load: a test may break the globals, and the end-of-run hook must still not fail.
const symbolFor = Symbol.for;
const withResolvers = Promise.withResolvers.bind(Promise);
const race = Promise.race.bind(Promise);
const now = performance.now.bind(performance);
const sleepSync = Bun.sleepSync;
const global = globalThis as unknown as Record<symbol, Slot | undefined>;
const slot = (name: string): Slot => (global[symbolFor(name)] ??= withResolvers<unknown>() as Slot);

// Before any test: sinon's fake timers replace the globals; Bun's own work below them (fakeTimers).
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const realSetImmediate = globalThis.setImmediate;

// True while Bun's fake timers are installed: no timer fires then.
function fakeTimers(): boolean {
  try {
    return jest.isFakeTimers?.() === true;
  } catch {
    return false;
  }
}

// Well past the runner's handshake budget (exec/shard.ts CONNECT_TIMEOUT_MS): expiry means the runner
// is gone or another process took the socket; the exit before any test reads as crashed.
const HOLD_MAX_MS = 60_000;
const HOLD_EXPIRED_EXIT = 3;

// The runner's move into the cgroup can land late; waiting before any file loads keeps descendants inside.
// Wait before moving itself: each move costs a grace period (bench/README.md, "Where the time goes").
const CGROUP_WAIT_MS = 200;
const cgroupDir = process.env.SHARDGUARD_CGROUP;
// Not in an --isolate batch: Bun 1.3.14 loses the batch's end when this preload awaits at top level.
const joined = cgroupDir === undefined || isolatedFiles > 1 ? null : joinCgroup(cgroupDir);

// Returns once this process is in `dir`; errors leave it where it is (only the accounting loses).
async function joinCgroup(dir: string): Promise<void> {
  try {
    const inside = async () => {
      const line = (await Bun.file("/proc/self/cgroup").text()).split("\n").find((l) => l.startsWith("0::"));
      const current = line?.slice(3);
      return current !== undefined && current !== "/" && dir.endsWith(current);
    };
    const deadline = performance.now() + CGROUP_WAIT_MS;
    while (performance.now() < deadline) {
      if (await inside()) return;
      await new Promise((resolve) => realSetTimeout(resolve, 1));
    }
    if (!(await inside())) await Bun.write(`${dir}/cgroup.procs`, "0");
  } catch {
    // The runner's move or its /proc sampling still counts the child.
  }
}

// Bun's connect mode does not wait for the debugger: hold until the runner enabled events and released
// us (runner/events/barrier.ts). The variable goes first so tests and their children never see it.
if (process.env.BUN_INSPECT_CONNECT_TO !== undefined) {
  delete process.env.BUN_INSPECT_CONNECT_TO;
  if (flushEvents && position === 0) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = {};
    const first = await race([
      slot("shardguard.released").promise,
      new Promise((resolve) => (timer = realSetTimeout(() => resolve(expired), HOLD_MAX_MS))),
    ]);
    realClearTimeout(timer);
    if (first === expired) {
      process.stderr.write(
        `shardguard: the runner never released this shard's tests within ${HOLD_MAX_MS / 1000} s (its inspector ` +
          `connection went elsewhere); no test ran\n`,
      );
      process.exit(HOLD_EXPIRED_EXIT);
    }
  }
}
if (joined !== null) await joined;

// Bun loses queued inspector events at exit: sleep so they leave.
const EXIT_FLUSH_MS = 25;

// Synchronous; a full disk must not fail the user's test.
function mark(kind: string): void {
  if (!marks) return;
  try {
    marks.write(kind);
    marks.flush();
  } catch {
    // Marks only sharpen a verdict, they never make one pass.
  }
}

if (flushEvents) {
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => {
    try {
      if (planFrom > 0) awaitPlan();
      Bun.sleepSync(EXIT_FLUSH_MS);
    } catch {
      // Never stand between a test and its exit.
    }
    return exit(code as number);
  }) as typeof process.exit;
}

let currentFile: string | undefined;
let filesBegun = position;
beforeEach(() => {
  const newFile = Bun.main !== currentFile;
  if (newFile) {
    currentFile = Bun.main;
    filesBegun += 1;
    mark(`f${currentFile}\0${countStart()}`);
    planFrom = planAcks ? startCount![0]! : 0;
  } else {
    const s = countStart();
    if (s !== "") mark(s);
    if (planFrom > 0) awaitPlan();
  }
  if (!bailBarriers || !newFile) return undefined;
  const k = filesBegun - 1;
  // The runner's slots live in the first file's global.
  if (!fakeTimers() && position === 0) return firstTestBarrier(k);
  // Fake timers: the barrier's timer never fires; sleep instead (Bun's inspector thread sends meanwhile).
  try {
    slot(`shardguard.firstTest.${k}`).resolve("first");
    Bun.sleepSync(FIRST_WAIT_MS);
  } catch {
    // Never stand between a test and its run.
  }
  return new Promise<void>((resolve) => realSetImmediate(resolve));
});

const PLAN_ACK_MAX_MS = 1_000;
const PLAN_ACK_STEP_MS = 0.05;
// False once a reply came late (later files do not wait), and under --bail (its own barrier waits).
let planAcks = flushEvents && !bailBarriers && startCount !== null && startCount.length > 1;
// The count at the current file's first test until the runner's reply is seen; 0 after.
let planFrom = 0;
const nanoseconds = Bun.nanoseconds;

// Later tests of a file wait until the runner holds its plan: Bun loses queued events when the
// process dies. Synchronous, so no test timer gets a turn plain `bun test` would not give (exec/start-acks.ts).
function awaitPlan(): void {
  const want = planFrom;
  planFrom = 0;
  if (startCount === null) return;
  try {
    const deadline = nanoseconds() + PLAN_ACK_MAX_MS * 1e6;
    while (startCount[1]! < want) {
      if (nanoseconds() > deadline) {
        planAcks = false;
        return;
      }
      sleepSync(PLAN_ACK_STEP_MS);
    }
  } catch {
    planAcks = false;
  }
}

// Under --bail the k-th file's first test waits for its plan: a fixed wait fails under load.
async function firstTestBarrier(k: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    slot(`shardguard.firstTest.${k}`).resolve("first");
    await race([
      slot(`shardguard.planReceived.${k}`).promise,
      new Promise<void>((resolve) => (timer = realSetTimeout(resolve, PLAN_MAX_MS))),
    ]);
    realClearTimeout(timer);
  } catch {
    // The plan may then be lost, never a pass.
  }
}
// A global afterAll never runs after process.exit, so "e" proves a normal end. It returns at once:
// an awaited hook would give pending timers a turn plain `bun test` never gives (./no-yield.ts).
function endOfFile(): void {
  if (!lastOfBatch) return;
  mark("e");
  void endOfRun();
}
// Its own timeout: Bun's per-hook one must not fail the run while it waits. Bun before 1.3.2 takes no
// timeout argument and throws; the hook returns at once, so it needs none there.
try {
  afterAll(endOfFile, ACK_MAX_MS + HOOK_SLACK_MS);
} catch {
  afterAll(endOfFile);
}

// In microtasks only: wait for the runner's acknowledgement, else list the descendants here.
async function endOfRun(): Promise<void> {
  try {
    if (!(await runnerAcknowledged())) await listDescendants();
  } catch {
    // A leak list is a report detail, never a verdict.
  }
}

// True once the runner had every event and listed the descendants. Polls in microtasks: Bun sends
// its reply from its own thread, and the event loop never gets a turn.
async function runnerAcknowledged(): Promise<boolean> {
  if (!flushEvents) return false;
  if (position === 0) slot("shardguard.endOfRun").resolve("end");
  if (position > 0 || startCount === null) {
    sleepSync(EXIT_FLUSH_MS);
    return false;
  }
  const deadline = now() + ACK_MAX_MS;
  for (;;) {
    await null;
    if (startCount[2] === END_ACK) return true;
    if (now() >= deadline) return false;
    pause(ACK_POLL_MS);
  }
}

// A fork bomb must not make the list the problem.
const MAX_LISTED = 100;

// Bun's --no-orphans kills them as the child exits, so they are listed now, as `\nP <pid> <pgid> <command>`.
async function listDescendants(): Promise<void> {
  if (process.platform !== "linux" || !marks) return;
  if (!fs && !(await mayHaveChildren(process.pid))) return;
  // node:fs only once there is a child to walk (docs/bun-behaviour.md, "Speed").
  const files = procFilesOf(fs ?? (require("node:fs") as typeof import("node:fs")));
  const lines = walkDescendants(files, process.pid, MAX_LISTED).map((d) => `\nP ${d.pid} ${d.pgid} ${d.command}`);
  if (lines.length === 0) return;
  marks.write(lines.join(""));
  marks.flush();
}
