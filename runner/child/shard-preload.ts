/**
 * Preload injected into every shard child (`bun test --preload <this file>`);
 * never imported by the runner. It gives the runner evidence that a kill
 * cannot lose and a test cannot easily forge, and makes Bun's inspector
 * events arrive, driven by the environment the runner sets:
 *
 * 1. Marks (`SHARDGUARD_MARKS=<file>`), written synchronously and read by
 *    runner/exec/marks.ts: `f<file>\0` before the first test of each test
 *    file (`Bun.main`), "e" when Bun reaches the normal end of the run (a
 *    global afterAll, which Bun skips after `process.exit`), and the count of
 *    test starts in `<file>.count`, twelve bytes the runner creates and this
 *    file maps shared: it increments the first u32 (an "s" appended per start
 *    when it cannot be mapped), the runner answers the plan barrier in the
 *    second and the end-of-run barrier in the third (2.), and "l" as each file of an `--isolate` batch begins
 *    to load (4.). Bun writes its JUnit only after a normal end and its
 *    events can be lost, so the runner trusts the JUnit only against these
 *    (a `process.exit(0)` mid-file is otherwise a file without tests), re-runs
 *    the unstarted files of a killed batch, and maps tests defined in helper
 *    modules to their files (runner/events/attribution.ts).
 *
 * 2. Event delivery (`SHARDGUARD_YIELD=1`, events on). Bun's connect mode
 *    does not wait for the runner, so the tests are held before the first file
 *    loads until the runner releases them. Bun sends events from a thread of
 *    its own, and loses those still queued when the process ends, so the
 *    preload waits at the ends, never per test (a timer per test costs about
 *    1 ms each): after the global afterAll, a barrier with the runner
 *    (runner/events/inspector.ts), answered in the mapped count file (1.)
 *    and bounded by {@link ACK_MAX_MS}; under
 *    `--bail` (`SHARDGUARD_YIELD=bail`), where Bun skips that afterAll, a
 *    barrier before each file's first test so its `found` plan has arrived (else a synchronous one, {@link awaitPlan});
 *    and a synchronous sleep of {@link EXIT_FLUSH_MS} inside `process.exit`.
 *    A crash by a signal can still lose the last events: missing data is
 *    "unknown", never a pass. The end of the run never hands the event loop
 *    a turn (./no-yield.ts): plain `bun test` gives a test's pending timers
 *    none there, so a late rejection that passes there passes here.
 *
 * 3. Leftovers. Bun's `--no-orphans` kills the descendants still in the
 *    group as the child exits, before any sweep could see them, so they are
 *    listed at the end of the run while the child waits: by the runner when
 *    the barrier reaches it (runner/exec/shard-attempt.ts), else (events off, or no
 *    answer) here, appended to the marks file as `\nP <pid> <pgid> <command>`
 *    lines (Linux; /proc through ./proc-reader.ts, the runner's own parser).
 *
 * 4. `--isolate` batches (`SHARDGUARD_ISOLATE_FILES=<n>`, n > 1). Bun then
 *    runs this preload once per file, each time in a fresh global object with
 *    process.env as the process started (measured on Bun 1.3.13 to 1.4.5;
 *    docs/bun-behaviour.md), and its global afterAll after every file. No
 *    JavaScript object outlives a file, so this file's position in the batch
 *    is counted in a file of its own (`<marks>.seq.<pid>`, one byte per file):
 *    only the first file holds for the release, only the last writes "e", and
 *    the marks are appended, never truncated. The runner's end-of-run promise
 *    lives in the first file's global, which is gone by then, so the last
 *    file sleeps {@link EXIT_FLUSH_MS} for the events to leave instead of the
 *    barrier (the JUnit, written at the normal end, holds every verdict).
 * 5. The shard's cgroup (`SHARDGUARD_CGROUP`): no test file loads before
 *    this process is in it (the runner moves it off its own thread).
 *
 * The measurements behind these choices are in docs/bun-behaviour.md ("The
 * child preload"). The hooks never fail a test (errors are swallowed); per
 * test they cost one store into the mapped count. This file imports only
 * bun:test and its own folder, which the run copies whole (exec/coverage.ts).
 */
import { afterAll, beforeEach, jest } from "bun:test";
import { procFilesOf, walkDescendants } from "./proc-reader.ts";
import { mayHaveChildren, pause } from "./no-yield.ts";

// Bun's FileSink, not node:fs, whose import costs every child about 2.5 ms
// of CPU (docs/bun-behaviour.md, "Speed"); flush() on a file sink writes synchronously.
const marksPath = process.env.SHARDGUARD_MARKS;
/** Files of an `--isolate` batch (4. above); 1 when the shard does not run isolated or has one file. */
const isolatedFiles = Number.parseInt(process.env.SHARDGUARD_ISOLATE_FILES ?? "", 10) || 1;
// node:fs only for isolated batches: its import costs every other child about 2.5 ms.
const fs = isolatedFiles > 1 && marksPath ? (require("node:fs") as typeof import("node:fs")) : null;
/** 0-based position of the file this preload runs for in an isolated batch; 0 otherwise. */
const position = fs && marksPath ? nextPosition(fs, `${marksPath}.seq.${process.pid}`) : 0;
const lastOfBatch = position >= isolatedFiles - 1;
const marks: { write(text: string): unknown; flush(): unknown } | null = !marksPath
  ? null
  : fs
    ? { write: (text: string) => fs.appendFileSync(marksPath, text), flush: () => undefined }
    : marksSink(marksPath);
// "l": this file of an isolated batch begins to load. Bun loads them in the order given, so
// a file that hangs or exits at its top level, before it registers a test, is named by the
// count (not the file before it, whose tests had all ended).
if (fs) mark("l");

/**
 * The marks file's sink, opened now; null when it cannot be (its directory
 * deleted by a test): no marks, so a stricter verdict, never a pass.
 */
function marksSink(file: string): { write(text: string): unknown; flush(): unknown } | null {
  try {
    return Bun.file(file).writer();
  } catch {
    return null;
  }
}

/** Counts this preload's run in `seqFile` and returns how many came before it (0 when the file cannot be used); the last one removes it. */
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
/** Suffix of the start-count file next to the marks file (START_COUNT_SUFFIX in runner/exec/marks.ts). */
const START_COUNT_SUFFIX = ".count";
/** Size of that file: the start count, the runner's plan-barrier reply, its end-of-run acknowledgement (COUNT_FILE_BYTES in marks.ts). */
const COUNT_FILE_BYTES = 12;
/** What the runner stores in the third word once it has every event and listed the descendants (END_ACK in marks.ts). */
const END_ACK = 1;
/**
 * `<marks>.count` mapped shared, three u32: [0] the start count, [1] the
 * runner's reply to the plan barrier ({@link awaitPlan}), [2] its
 * end-of-run acknowledgement; null when it could not be mapped, and then
 * each start appends an "s" instead. Uint32Array stores in the machine's
 * byte order, little-endian on every platform Bun runs on.
 */
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

/** Counts one test start: read-modify-write, so a nested preload sharing the file adds to it. */
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
// "bail" (the user passed --bail): Bun ends the run right after the first
// failure, without the global afterAll, so a fast file could lose every
// event, its `found` plan included; a barrier before each file's first test
// makes sure its plan arrived (firstTestBarrier).
const bailBarriers = process.env.SHARDGUARD_YIELD === "bail";

/** Wait before the first test under --bail when Bun's fake timers are on (no barrier then), ms. */
const FIRST_WAIT_MS = 5;

/**
 * Longest wait for the runner's end-of-run acknowledgement, ms. It normally
 * takes one round trip, but the runner answers only once it has read every
 * event before it, which on a loaded machine takes seconds for large events
 * (docs/bun-behaviour.md, "The child preload"). A child whose barrier cannot
 * complete (a test broke what it needs) waits this long.
 */
const ACK_MAX_MS = 5_000;
/** Sleep between two looks at the acknowledgement, ms. */
const ACK_POLL_MS = 0.2;

/** What the end-of-run wait may take beyond that (the descendant listing), ms: Bun counts it in the hook's time. */
const HOOK_SLACK_MS = 5_000;

/** Longest wait under --bail for the runner to hold a file's plan, ms: inside a test's beforeEach, whose timeout (Bun's) this must stay under. */
const PLAN_MAX_MS = 1_000;

/**
 * The promise slots shared with the runner's inspector client through
 * `Runtime.evaluate` (END_OF_RUN_EXPRESSION and the --bail barrier's in
 * runner/events/barrier.ts; nothing of the runner is imported). Either side may
 * create a slot first.
 */
type Slot = { promise: Promise<unknown>; resolve: (value?: unknown) => void };
// Taken at load: a test may break the globals (`Symbol = undefined`), and
// the end-of-run hook must still not fail a run that plain `bun test` passes.
const symbolFor = Symbol.for;
const withResolvers = Promise.withResolvers.bind(Promise);
const race = Promise.race.bind(Promise);
const now = performance.now.bind(performance);
const sleepSync = Bun.sleepSync;
const global = globalThis as unknown as Record<symbol, Slot | undefined>;
const slot = (name: string): Slot => (global[symbolFor(name)] ??= withResolvers<unknown>() as Slot);

/**
 * The timer functions as they were before any test ran: a test may replace
 * the globals (sinon's fake timers do), and the waits below must still end.
 * Bun's own fake timers work below the globals; {@link fakeTimers} tells.
 */
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const realSetImmediate = globalThis.setImmediate;

/** True while Bun's fake timers are installed (`jest.useFakeTimers()`): no timer fires then. */
function fakeTimers(): boolean {
  try {
    return jest.isFakeTimers?.() === true;
  } catch {
    return false;
  }
}

/**
 * Longest hold before the first test file for the runner's release, ms:
 * well past the runner's 5 s handshake budget (exec/shard.ts
 * CONNECT_TIMEOUT_MS), after which it has stopped this child and runs the
 * shard again without events. Only a runner that vanished, or another
 * process that dialled the socket first (docs/architecture.md), lets it
 * expire; the child then exits with {@link HOLD_EXPIRED_EXIT} before any
 * test, which the verdict calls crashed, never passed.
 */
const HOLD_MAX_MS = 60_000;
const HOLD_EXPIRED_EXIT = 3;

// The shard's cgroup (`SHARDGUARD_CGROUP`, runner/exec/resource-usage.ts):
// the runner moves this child into it from its thread pool, which can land
// after this line when the machine is loaded. Waiting for it here, before
// any test file loads, keeps every descendant inside the group; past
// {@link CGROUP_WAIT_MS} the child moves itself (writing "0" moves the
// writer). It waits rather than writing at once: a move waits for an RCU
// grace period (5-9 ms on a 2-core VM), and a second move would make the
// child wait out another one (bench/README.md, P1).
const CGROUP_WAIT_MS = 200;
const cgroupDir = process.env.SHARDGUARD_CGROUP;
// Awaited after the hold for the runner's release below, which it overlaps. Not in an
// --isolate batch: there Bun 1.3.14 loses the batch's end when this preload awaits at its top
// level (every shard read as crashed); the runner's move alone then places the child, and
// what it forks before the move lands is outside the group's CPU figures.
const joined = cgroupDir === undefined || isolatedFiles > 1 ? null : joinCgroup(cgroupDir);

/** Returns once this process is in `dir`; errors leave it where it is (only the accounting loses). */
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
    // Not in the group: the runner's own move or its fallback to /proc sampling counts the child.
  }
}

// Events on: the runner gave this child `BUN_INSPECT_CONNECT_TO` (Bun's
// connect mode, which keeps plain `bun test`'s transpiler, unlike any
// inspector flag: runner/exec/bun-command.ts `inspectorEnv`). That mode does not
// wait for the debugger, so hold here, before any test file loads, until the
// runner has enabled the test events and releases us (RELEASE_EXPRESSION in
// runner/events/barrier.ts). The variable goes first: the test never sees it
// in process.env, nor do node:child_process children (Bun.spawn's default
// environment still has it; the runner removed the socket file by then).
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
        `shardguard: the runner never released this shard's tests within ${HOLD_MAX_MS / 1000} s (its inspector connection went elsewhere); no test ran\n`,
      );
      process.exit(HOLD_EXPIRED_EXIT);
    }
  }
}
if (joined !== null) await joined;

/** Sleep before a `process.exit` of a test, ms, so queued inspector events leave. */
const EXIT_FLUSH_MS = 25;

/** Appends one mark synchronously; a full disk must not fail the user's test. */
function mark(kind: string): void {
  if (!marks) return;
  try {
    marks.write(kind);
    marks.flush();
  } catch {
    // Ignored on purpose: the marks only sharpen a verdict, they never make one pass.
  }
}

if (flushEvents) {
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => {
    try {
      // An exit in a file's first test, before its plan barrier: the file's plan reaches the runner first.
      if (planFrom > 0) awaitPlan();
      Bun.sleepSync(EXIT_FLUSH_MS);
    } catch {
      // Never stand between a test and its exit.
    }
    return exit(code as number);
  }) as typeof process.exit;
}

let currentFile: string | undefined;
/** Test files begun so far in this process; the k-th file's barrier is named by k - 1. */
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
  // A later file of an isolated batch: the runner's slots live in the first file's global.
  if (!fakeTimers() && position === 0) return firstTestBarrier(k);
  // Under fake timers installed at load (`jest.useFakeTimers()`) the
  // barrier's bounding timer never fires (test/preload-globals.test.ts): sleep
  // synchronously instead, like the wait in process.exit (Bun's inspector
  // thread sends while the main thread sleeps), and give the event loop one turn.
  try {
    slot(`shardguard.firstTest.${k}`).resolve("first");
    Bun.sleepSync(FIRST_WAIT_MS);
  } catch {
    // Never stand between a test and its run.
  }
  return new Promise<void>((resolve) => realSetImmediate(resolve));
});

/** Longest synchronous wait for the runner's reply ({@link awaitPlan}), ms. */
const PLAN_ACK_MAX_MS = 1_000;
/** Sleep between two looks at the runner's reply, ms. */
const PLAN_ACK_STEP_MS = 0.05;
/** False once a reply failed to come in time (later files do not wait), and under --bail (its own barrier waits). */
let planAcks = flushEvents && !bailBarriers && startCount !== null && startCount.length > 1;
/** The count at the current file's first test while the runner's reply has not been seen; 0 after. */
let planFrom = 0;
const nanoseconds = Bun.nanoseconds;

/**
 * The plan barrier, from the second test of each file on (events on): until
 * the runner has received the `start` event of the file's first test, and
 * with it the file's `found` plan, each test start waits for it,
 * synchronously and at most {@link PLAN_ACK_MAX_MS} in all. Bun loses the
 * tail of its event queue when the process dies: a test that kills its
 * process group right after a run of quick tests otherwise takes their names
 * with it (the start count still counts them). The first test does not wait
 * (a file of one test costs nothing), nor any after the reply was seen.
 * Synchronous, like the wait in process.exit: Bun's inspector thread sends
 * while the main thread sleeps, and no timer or microtask of the test gets a
 * turn that plain `bun test` would not give it (runner/exec/start-acks.ts).
 */
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

/**
 * Under --bail: the first test of the k-th file (0-based) waits until the
 * runner has every event sent before it (that file's `found` plan; Bun's
 * reply to the runner's awaitPromise on the slot comes after them), at most
 * {@link PLAN_MAX_MS}. A fixed wait is not enough under load
 * (docs/bun-behaviour.md; test/bail-plan.test.ts).
 */
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
    // A test broke what the slot needs: go on; the plan may then be lost, never a pass.
  }
}
// A global afterAll runs once, after every file, even when no test was
// registered, and never after a call to process.exit: its "e" proves that Bun
// reached the normal end of the run (measured on Bun 1.4.4). It returns at once:
// plain `bun test` exits without giving pending timers a turn, and an awaited
// hook would give them one (a late rejection then failed the run). The waits
// run in microtasks, which Bun drains right after the hook (docs/bun-behaviour.md).
afterAll(() => {
  if (!lastOfBatch) return;
  mark("e");
  void endOfRun();
  // Its own timeout: Bun's per-hook one (5 s, or a project's --timeout) must not fail the run while it waits.
}, ACK_MAX_MS + HOOK_SLACK_MS);

/**
 * The end of the run, in microtasks only: wait for the runner's
 * acknowledgement (2. above), else list the descendants here (3.).
 */
async function endOfRun(): Promise<void> {
  try {
    if (!(await runnerAcknowledged())) await listDescendants();
  } catch {
    // Ignored on purpose: a leak list is a report detail, never a verdict; never fail the run from here.
  }
}

/**
 * True once the runner stored {@link END_ACK} in the mapped count file: it
 * had every event and listed this process's descendants. Resolving the slot
 * queues the reaction to the runner's awaitPromise; each poll lets
 * microtasks run (Bun then sends its reply from its own thread) and sleeps
 * {@link ACK_POLL_MS}, never handing the event loop a turn.
 */
async function runnerAcknowledged(): Promise<boolean> {
  if (!flushEvents) return false;
  // The barrier's promise lived in the first file's global.
  if (position === 0) slot("shardguard.endOfRun").resolve("end");
  if (position > 0 || startCount === null) {
    // Nothing carries an answer: give Bun's thread the time to send.
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

/** Most descendants listed; a fork bomb must not make the list the problem. */
const MAX_LISTED = 100;

/** Appends `\nP <pid> <pgid> <command>` for every live descendant of this process to the marks, breadth first (Linux). */
async function listDescendants(): Promise<void> {
  if (process.platform !== "linux" || !marks) return;
  if (!fs && !(await mayHaveChildren(process.pid))) return;
  // Loaded only here, once there is a child to walk: its import costs the child about 2 ms.
  const files = procFilesOf(fs ?? (require("node:fs") as typeof import("node:fs")));
  const lines = walkDescendants(files, process.pid, MAX_LISTED).map((d) => `\nP ${d.pid} ${d.pgid} ${d.command}`);
  if (lines.length === 0) return;
  marks.write(lines.join(""));
  marks.flush();
}
