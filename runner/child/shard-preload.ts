/**
 * Preload injected into every shard child (`bun test --preload <this file>`);
 * never imported by the runner itself. Three jobs, driven by environment
 * variables the runner sets:
 *
 * 1. `SHARDGUARD_MARKS=<file>`: count test starts, append "e" at the end
 *    of the run and `f<file>\0` before the first test of each test file
 *    (`Bun.main` is the file being run), synchronously; read by
 *    runner/exec/marks.ts. Test starts are counted in `<file>.count`, four
 *    zero bytes the runner creates before the spawn, mapped here with
 *    `Bun.mmap` (MAP_SHARED) and incremented as a little-endian u32 per
 *    test start: a store into the page cache, which keeps the value when
 *    this process is SIGKILLed and shows it to the runner at once. It
 *    replaced one synchronous "s" append (a write syscall) per test, ~60 ms
 *    per 100,000 tests (bench/README.md). When the mapping cannot be made
 *    (no such file, a size other than 4 bytes, any error) each start
 *    appends "s" to the marks file as before; the runner adds both. The file records let the runner re-run, in fresh
 *    shards, the files of a killed batched shard that never started, and
 *    map tests defined through helper modules to their files
 *    (runner/events/attribution.ts).
 *    Bun writes its JUnit only when a run ends normally, and inspector events
 *    can be lost when a process exits, so without this a child that called
 *    `process.exit(0)` mid-file looks the same as a file with no tests
 *    (exit 0, no JUnit, no events). A synchronous append cannot be lost.
 *
 * 2. `SHARDGUARD_YIELD=1` (events on): before any test file loads, hold until
 *    the runner released the tests (Bun's connect mode, `BUN_INSPECT_CONNECT_TO`,
 *    does not wait for a debugger itself; see the hold below). Then give the inspector time to send its
 *    queued events before the process ends. Bun 1.4.4 sends inspector
 *    messages from a thread of its own: a main thread that spins (the
 *    wall-clock kill case) does not hold them back (measured: 5,000
 *    synchronous tests then a spin, all 5,000 `end` events and the spinning
 *    test's `start` arrived before the SIGKILL, 8 of 8 runs, with no yield at
 *    all). What loses events is the process ending right after them: 20
 *    synchronous tests then `process.exit(0)` delivered 0 to 5 of 20 `end`
 *    events; a natural end without a yield, 0 to 5. So the preload waits
 *    only at the two ends, never per test (a 0 ms timer costs about 1 ms in
 *    Bun, which made 100,000 tests take minutes, bench/README.md; it also let a
 *    late uncaught error of one test fire between tests, where plain
 *    `bun test` fails the next test: test/late-error.test.ts):
 *    - after all tests, an end-of-run barrier with the runner
 *      (runner/events/inspector.ts): resolve the promise the runner awaits
 *      through the inspector, whose reply Bun sends after every event
 *      queued before it, then wait (at most {@link ACK_MAX_MS}) until the
 *      runner, holding that reply and so every event, resolves ours. A 0 ms
 *      timer here instead lost every event of about 1 short shard in 50 at
 *      two shards per core (Bun's sending thread had not run yet;
 *      bench/event-loss.ts);
 *    - with `--bail` (SHARDGUARD_YIELD=bail), where Bun ends without the
 *      afterAll, the same kind of barrier before each file's first test
 *      (the runner's per-file requests), so that file's `found` plan has
 *      arrived before any of its tests can fail; under Bun's fake timers a 5 ms synchronous sleep
 *      instead (a fixed 5 ms wait lost the plan now and then under load);
 *    - in `process.exit`, a synchronous sleep of {@link EXIT_FLUSH_MS}
 *      before the real exit (an event-loop turn is impossible inside a
 *      synchronous call; 10 ms delivered 20 of 20 in 14 of 15 runs).
 *    A crash by a signal (SIGSEGV, an OOM kill) can still lose the events of
 *    the last moments; missing data is "unknown", never a pass.
 *
 * 3. At the end of the run (the same afterAll, after its "e"), the shard's
 *    live descendants must be listed: Bun's `--no-orphans` kills
 *    descendants still in the group as soon as the child exits, so the
 *    runner's sweep would never see a process a test leaked
 *    (docs/architecture.md, leftovers). With events on, the runner lists
 *    them itself when the end-of-run barrier reaches it, before it answers
 *    (runner/exec/shard.ts; synchronous reads there cost ~0.1 ms, where
 *    this listing cost the child ~1 ms of CPU per shard, bench/README.md).
 *    Without an answer (events off, or no answer within ACK_MAX_MS) they
 *    are appended here to the marks file, one line each:
 *    `\nP <pid> <process group id> <command line>`. Linux only (/proc);
 *    read with Bun's own file API, not node:fs (see below).
 *
 * The hooks cannot fail (errors are swallowed); per test they cost one
 * store into the mapped count (one synchronous append without it).
 */
import { afterAll, beforeEach, jest } from "bun:test";

// Bun's FileSink, not node:fs: importing node:fs costs a child about 4 ms,
// which dominated the runner's overhead on small files (bench/events-overhead.ts);
// flush() on a file sink writes synchronously.
const marksPath = process.env.SHARDGUARD_MARKS;
const marks = marksPath ? Bun.file(marksPath).writer() : null;
/** Suffix of the start-count file next to the marks file (START_COUNT_SUFFIX in runner/exec/marks.ts). */
const START_COUNT_SUFFIX = ".count";
/**
 * The start count, one u32 mapped from `<marks>.count`; null when it could
 * not be mapped, and then each start appends an "s" instead. Uint32Array
 * stores in the machine's byte order, little-endian on every platform Bun
 * runs on.
 */
const startCount = marksPath ? mapStartCount(marksPath + START_COUNT_SUFFIX) : null;

/** Maps the runner's 4-byte count file; null on any error or any other size. */
function mapStartCount(file: string): Uint32Array | null {
  try {
    const bytes = Bun.mmap(file);
    return bytes.byteLength === 4 ? new Uint32Array(bytes.buffer, bytes.byteOffset, 1) : null;
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
// failure, without running the global afterAll, so a fast file could lose
// every event, its `found` plan included (seen in the differential test
// under load). A barrier with the runner before each file's first test
// makes sure its plan arrived (firstTestBarrier).
const bailBarriers = process.env.SHARDGUARD_YIELD === "bail";

/** Wait before the first test under --bail when Bun's fake timers are on (no barrier then), ms. */
const FIRST_WAIT_MS = 5;

/**
 * Longest wait for the runner's end-of-run acknowledgement, ms: 5,000. It
 * normally takes one round trip, but the runner answers only once it has
 * read every event before it: with 1 s, a loaded machine (load 12 on 2
 * cores) ended 2 of 3 runs of 300 tests with 80 KB names before the runner
 * had read their events, and every `start` and `end` was lost (the
 * process exited with them still in Bun's queue; issue 25). A child whose
 * barrier cannot complete (a test broke what it needs) waits this long.
 */
const ACK_MAX_MS = 5_000;

/** Longest wait under --bail for the runner to hold a file's plan, ms: inside a test's beforeEach, whose timeout (Bun's) this must stay under. */
const PLAN_MAX_MS = 1_000;

/** What the end-of-run hook may take beyond that wait (the descendant listing), ms. */
const HOOK_SLACK_MS = 5_000;

/**
 * The promise slots shared with the runner's inspector client through
 * `Runtime.evaluate` (END_OF_RUN_EXPRESSION and ACK_EXPRESSION in
 * runner/events/inspector.ts; this file imports nothing). Either side may
 * create a slot first.
 */
type Slot = { promise: Promise<unknown>; resolve: (value?: unknown) => void };
// Taken at load: a test may break the globals (`Symbol = undefined`), and
// the end-of-run hook must still not fail a run that plain `bun test` passes.
const symbolFor = Symbol.for;
const withResolvers = Promise.withResolvers.bind(Promise);
const race = Promise.race.bind(Promise);
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

// Events on: the runner gave this child `BUN_INSPECT_CONNECT_TO` (Bun's
// connect mode, which keeps plain `bun test`'s transpiler, unlike any
// inspector flag: runner/exec/command.ts `inspectorEnv`). That mode does not
// wait for the debugger, so hold here, before any test file loads, until the
// runner has enabled the test events and releases us (RELEASE_EXPRESSION in
// runner/events/barrier.ts). The variable goes first: the test never sees it
// in process.env, nor do node:child_process children (Bun.spawn's default
// environment still has it; the runner removed the socket file by then).
if (process.env.BUN_INSPECT_CONNECT_TO !== undefined) {
  delete process.env.BUN_INSPECT_CONNECT_TO;
  if (flushEvents) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = {};
    const first = await race([slot("shardguard.released").promise, new Promise((resolve) => (timer = realSetTimeout(() => resolve(expired), HOLD_MAX_MS)))]);
    realClearTimeout(timer);
    if (first === expired) {
      process.stderr.write(`shardguard: the runner never released this shard's tests within ${HOLD_MAX_MS / 1000} s (its inspector connection went elsewhere); no test ran\n`);
      process.exit(HOLD_EXPIRED_EXIT);
    }
  }
}

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
      Bun.sleepSync(EXIT_FLUSH_MS);
    } catch {
      // Never stand between a test and its exit.
    }
    return exit(code as number);
  }) as typeof process.exit;
}

let currentFile: string | undefined;
/** Test files begun so far in this process; the k-th file's barrier is named by k - 1. */
let filesBegun = 0;
beforeEach(() => {
  const newFile = Bun.main !== currentFile;
  if (newFile) {
    currentFile = Bun.main;
    filesBegun += 1;
    mark(`f${currentFile}\0${countStart()}`);
  } else {
    const s = countStart();
    if (s !== "") mark(s);
  }
  if (!bailBarriers || !newFile) return undefined;
  const k = filesBegun - 1;
  if (!fakeTimers()) return firstTestBarrier(k);
  // A file that installs fake timers at load (`jest.useFakeTimers()`) would
  // never fire the barrier's bounding timer, and its first test failed after
  // Bun's 5 s hook timeout (test/preload-globals.test.ts). Then sleep
  // synchronously, like the wait in process.exit (Bun's inspector thread
  // sends while the main thread sleeps), and give the event loop one turn.
  try {
    slot(`shardguard.firstTest.${k}`).resolve("first");
    Bun.sleepSync(FIRST_WAIT_MS);
  } catch {
    // Never stand between a test and its run.
  }
  return new Promise<void>((resolve) => realSetImmediate(resolve));
});

/**
 * Under --bail: the first test of the k-th file (0-based) waits until the
 * runner has every event sent before it (that file's `found` plan; Bun's
 * reply to the runner's awaitPromise on the slot comes after them), at most
 * {@link PLAN_MAX_MS}. A fixed 5 ms wait before the first test of the
 * process lost the plan now and then under load (test/bail-plan.test.ts).
 */
async function firstTestBarrier(k: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    slot(`shardguard.firstTest.${k}`).resolve("first");
    await race([slot(`shardguard.planReceived.${k}`).promise, new Promise<void>((resolve) => (timer = realSetTimeout(resolve, PLAN_MAX_MS)))]);
    realClearTimeout(timer);
  } catch {
    // A test broke what the slot needs: go on; the plan may then be lost, never a pass.
  }
}
// A global afterAll runs once, after every file, even when no test was
// registered, and never after a call to process.exit: its "e" proves that Bun
// reached the normal end of the run (measured on Bun 1.4.4).
afterAll(async () => {
  mark("e");
  // With events on, wait until the runner has every event (see 2. above).
  // The runner lists this process's descendants before it answers, so an
  // answer means the list exists (3. above) and this process skips its own.
  let acknowledged = false;
  if (flushEvents) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      slot("shardguard.endOfRun").resolve("end");
      const timedOut = {};
      const first = await race([slot("shardguard.eventsReceived").promise, new Promise((resolve) => (timer = realSetTimeout(() => resolve(timedOut), ACK_MAX_MS)))]);
      acknowledged = first !== timedOut;
      realClearTimeout(timer);
    } catch {
      // A test broke what the slot needs: never fail the run from here.
    }
  }
  if (acknowledged) return;
  try {
    const lines = await descendantLines();
    if (marks && lines.length > 0) {
      marks.write(lines.join(""));
      marks.flush();
    }
  } catch {
    // Ignored on purpose: a leak list is a report detail, never a verdict.
  }
  // Its own timeout: Bun's per-hook one (5 s, or a project's --timeout) must not fail the run while it waits.
}, ACK_MAX_MS + HOOK_SLACK_MS);

/** Most descendants listed; a fork bomb must not make the list the problem. */
const MAX_LISTED = 100;

/** Text of a /proc file, "" when it cannot be read (the process is gone). */
const procText = (file: string) => Bun.file(file).text().catch(() => "");

/**
 * Child pids of every thread of `pid` (a child belongs to the thread that
 * forked it), each read through the thread's own directory: read as
 * `/proc/<pid>/task/<tid>/children` (as Bun's --no-orphans reads them at
 * exit) they make the runner's reap of this process ~1.5-3.5 ms slower,
 * read this way first they spare it that (runner/exec/proc-inspect.ts `childrenOf`).
 */
async function childrenOf(pid: number): Promise<number[]> {
  const tasks = [...new Bun.Glob("*").scanSync({ cwd: `/proc/${pid}/task`, onlyFiles: false })];
  const lists = await Promise.all(tasks.map((tid) => procText(`/proc/${tid}/task/${tid}/children`)));
  return lists.join(" ").split(/\s+/).filter((p) => /^\d+$/.test(p)).map(Number);
}

/** `\nP <pid> <pgid> <command>` for every live, non-zombie descendant of this process, breadth first. */
async function descendantLines(): Promise<string[]> {
  if (process.platform !== "linux" || !marks) return [];
  const lines: string[] = [];
  const queue = await childrenOf(process.pid);
  const seen = new Set<number>();
  while (queue.length > 0 && lines.length < MAX_LISTED) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const [stat, cmdline] = await Promise.all([procText(`/proc/${pid}/stat`), procText(`/proc/${pid}/cmdline`)]);
    // Fields after the ")" closing the command name: state, ppid, pgrp, ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (stat === "" || fields[0] === "Z" || fields[0] === "X") continue;
    const command = cmdline.split("\0").join(" ").replace(/[\r\n]/g, " ").trim().slice(0, 200);
    lines.push(`\nP ${pid} ${fields[2]} ${command}`);
    queue.push(...(await childrenOf(pid)));
  }
  return lines;
}
