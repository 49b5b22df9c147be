/**
 * Verdict and merge rules: turns what is known about one shard into its
 * {@link ShardResult}.
 *
 * Evidence, in order of authority:
 *  1. what shardguard itself did (never started it, killed it at the deadline,
 *     killed it on cancel) and how the process ended (exit code, signal);
 *  2. Bun's own JUnit file, which Bun writes only when a run ends normally,
 *     so its presence proves the run finished;
 *  3. inspector test events (found/start/end/error), which survive a kill but
 *     may lose their tail when a process exits.
 * Console text is never evidence: a test can print anything.
 *
 * Rules (docs/reports.md):
 *  - killed at the deadline → `timed-out`; tests that ended keep their status,
 *    the one in flight is `timed-out`, the rest found but not started are
 *    `never-started`;
 *  - cancelled → `crashed` ("run cancelled"), same per-test split;
 *  - ended by a signal we did not send, or exit 0/1 without the JUnit proof of
 *    a finished run while tests had started → `crashed`;
 *  - exit 1 with no test found and no JUnit → `failed` (the file did not load);
 *  - ended normally → Bun's JUnit is the authority for final statuses, events
 *    add retries, flakiness and lines; a planned file missing from it had no
 *    tests (an empty file, `failed` under `empty-files = "fail"`) or failed to load;
 *  - nothing shardguard killed is ever `passed`.
 */
import type { BunJUnitFile } from "./bun-junit.ts";
import { emptyFile, emptyFilesNote, emptyFilesPass, type Base } from "./entries.ts";
import { hookEntry, fromEvent, loadFailure, seconds, synthetic, WHOLE_FILE } from "./entries.ts";
import { endingOf, oomSentence, type Interruption } from "./endings.ts";
import { fromJUnit, isHook } from "./from-junit.ts";
import { foldJUnitAttempts } from "./junit-attempts.ts";
import type { Failure, FailureKind, ShardResult, TestResult, TestStatus } from "./report-model.ts";
import { endWithoutStart, readStarts, startedEntry, unnamedEntry, untrustedPass } from "./start-count.ts";
import type { EndingFacts, StartReading } from "./start-count.ts";
import type { EventEvidence, EventTest, ProcessFacts, ShardEvidence } from "./verdict-evidence.ts";

export { oomSentence, WHOLE_FILE };
export type { EventEvidence, EventTest, Interruption, ProcessFacts, ShardEvidence };

/**
 * Decides one shard's status, reason and per-test entries.
 *
 * No I/O. Every planned file gets at least one test entry, so every
 * planned file appears in every report. The test entries of `ev.junit` and
 * the event tests' failed-attempt lists become the result's own (reused,
 * not copied: 100,000 tests, bench/README.md): do not read `ev.junit` again.
 */
export function decideShard(ev: ShardEvidence): ShardResult {
  const p = ev.process;
  const base = shardBase(ev);
  // The rules of docs/reports.md's "Verdict rules", first match wins.
  // 1. Never spawned.
  if (!p.started) return neverStarted(ev, p.notStartedReason ?? "never started", ev.logPath);
  // 2-4. Killed at the deadline, on cancel, or by a signal shardguard did not send.
  const killed = killedBy(p, ev);
  if (killed) return interrupted(ev, base, killed);
  // 5. Bun's JUnit, when the rest of the evidence agrees with it.
  const code = p.exitCode ?? -1;
  const junit = foldedJUnit(ev, code);
  const distrust = junit ? junitDisagreement(ev, junit, code) : null;
  if (junit && distrust === null) return fromJUnit(ev, base, code, junit);
  // 6-7. No JUnit (not an untrusted one), exit 1, no test ran: a file failed to load.
  const loadFailed = distrust ? null : loadFailedShard(ev, base, code);
  if (loadFailed) return loadFailed;
  // 8. "No tests" needs proof that the run ended normally: exit 0 without JUnit
  // is also what a `process.exit` with code 0 before any test looks like.
  if (code === 0 && !anyFound(ev) && ev.finishedNormally === true) {
    return noTests(ev, base);
  }
  // 9-10. Bun's JUnit unusable after the run's end, or anything else (endingWithoutJUnit).
  return interrupted(ev, base, endingWithoutJUnit(ev, code, distrust));
}

/** The fields of a shard's result that come from its evidence as they are, whatever its verdict. */
function shardBase(ev: ShardEvidence): Base {
  const p = ev.process;
  return {
    index: ev.index,
    slug: ev.slug,
    files: ev.files,
    exitCode: p.exitCode,
    signal: p.signal,
    killedBy: p.killedBy,
    durationMs: Math.max(0, p.durationMs),
    startedAt: p.startedAt,
    logPath: ev.logPath,
    logIncomplete: ev.logIncomplete,
    ...(ev.notes && ev.notes.length > 0 ? { notes: [...ev.notes] } : {}),
    leftovers: [],
  };
}

/**
 * How a shard shardguard killed, or a signal it did not send, ended; null
 * when it exited by itself. First match wins (docs/reports.md, "Verdict
 * rules"): the deadline, then a cancel, then a foreign signal.
 */
function killedBy(p: ProcessFacts, ev: ShardEvidence): Interruption | null {
  if (p.killedBy === "timeout") {
    const sigkilled = p.escalated && p.signal === "SIGKILL";
    return {
      kind: "timeout",
      timeoutMs: ev.timeoutMs,
      graceMs: ev.graceMs,
      sigkilled,
      stopped: p.stoppedAtSigterm === true,
    };
  }
  if (p.killedBy === "cancel") return { kind: "cancelled", signal: p.cancelSignal ?? null };
  if (p.signal) return { kind: "foreign-signal", signal: p.signal, oom: p.oomKills ?? null };
  return null;
}

/** Bun's JUnit with each retried test one entry: Bun 1.3.x lists each attempt as a testcase (junit-attempts.ts). */
function foldedJUnit(ev: ShardEvidence, code: number): BunJUnitFile[] | null {
  return ev.junit && ev.junitAttempts
    ? foldJUnitAttempts(ev.junit, {
        events: ev.events?.tests ?? null,
        maxAttempts: ev.junitAttempts.maxAttempts,
        exitedZero: code === 0,
      })
    : ev.junit;
}

/** A test that started proves tests were registered, even if its events were lost. */
const anyFound = (ev: ShardEvidence) => (ev.events?.tests ?? []).length > 0 || (ev.testsStarted ?? 0) > 0;

/**
 * A shard without Bun's JUnit whose exit 1 came before any test ran: a
 * file failed to load; null otherwise. First match wins (docs/reports.md,
 * "Verdict rules"):
 *  1. no test registered or started: each file a load error (under --bail,
 *     the files after the first never started);
 *  2. the end-of-run mark, tests registered, none ran: each file a load
 *     error, its registered tests never-started.
 */
function loadFailedShard(ev: ShardEvidence, base: Base, code: number): ShardResult | null {
  const eventTests = ev.events?.tests ?? [];
  if (code === 1 && !anyFound(ev)) {
    // Exit 1 with no test found and no JUnit: the file threw or failed to
    // import before any test. Under --bail Bun stopped at the first file
    // (files run in plan order), so the others never started.
    const stopped: Failure = {
      type: "never-started",
      message: "never started: --bail stopped the run after a file failed to load",
    };
    const tests = ev.files.map((file, i) =>
      ev.bail === true && i > 0 ? synthetic(file, "never-started", stopped) : loadFailure(ev, file),
    );
    return {
      ...base,
      status: "failed",
      reason: `a file failed to load (exit 1, no test registered)`,
      testSource: "synthetic",
      tests,
    };
  }
  if (code === 1 && ev.finishedNormally === true && !eventTests.some((t) => t.state !== "found")) {
    // Bun reached the normal end (end mark) with exit 1 and no JUnit, no test
    // having run: a file threw after registering tests (measured on Bun 1.4.4:
    // a top-level throw after test(), or test.only under CI). Its found tests
    // never started; they are not a crash.
    const tests = ev.files.flatMap((file) => [
      loadFailure(ev, file),
      ...eventTests
        .filter((t) => t.file === file)
        .map((t) =>
          fromEvent(t, "never-started", { type: "never-started", message: "never started: the file failed to load" }),
        ),
    ]);
    return {
      ...base,
      status: "failed",
      reason: `a file failed to load (exit 1 after registering tests, before any ran)`,
      testSource: "events",
      tests,
    };
  }
  return null;
}

/**
 * How a shard without a usable JUnit ended, when no rule before it matched.
 * First match wins (docs/reports.md, "Verdict rules", the last rows):
 *  1. the end mark, Bun's JUnit unusable (past the read limit, exit 0 or 1:
 *     junit-over-limit; otherwise junit-unusable);
 *  2. exit 0 or 1, the end mark missing with the deleted run directory: end-unknown;
 *  3. exit 0 or 1: early-exit;
 *  4. any other code: exit-code.
 */
function endingWithoutJUnit(ev: ShardEvidence, code: number, distrust: string | null): Interruption {
  const noJUnit = distrust
    ? `Bun's JUnit report was not trusted: ${distrust}`
    : (ev.junitProblem ?? "Bun wrote no JUnit report");
  // With the end mark, the run did reach its end: what is missing is a usable JUnit (too large, malformed, forged).
  if (ev.finishedNormally === true && !distrust && ev.junitProblem !== undefined) {
    // Bun finished and wrote a report too large to read: a failure to read it, not a crash; the events say what they saw.
    const kind = ev.junitOverLimit === true && (code === 0 || code === 1) ? "junit-over-limit" : "junit-unusable";
    return { kind, exitCode: code, problem: ev.junitProblem };
  }
  // The end mark may have gone with a run directory a test deleted: no early exit, no hook in flight, is made up.
  if (ev.marksDeleted === true && ev.finishedNormally !== true && (code === 0 || code === 1)) {
    return { kind: "end-unknown", exitCode: code, problem: noJUnit };
  }
  if (code === 0 || code === 1) return { kind: "early-exit", exitCode: code, noJUnit };
  return { kind: "exit-code", exitCode: code, noJUnit };
}

/**
 * Why Bun's JUnit cannot be taken as proof of a finished run, or null when
 * the rest of the evidence agrees with it. The file lies where the test
 * process can write, so a test can forge it and exit 0 (docs/reports.md). It is
 * trusted only when
 *  1. the child preload's end-of-run mark is there (Bun reached the normal
 *     end; `--bail` after a failure skips that hook, measured, and so does
 *     `--bail` after a later file failed to load, which Bun's JUnit does not
 *     list but exits 1 for: a shard that exits 1 cannot pass), and
 *  2. it lists no more tests as run (passed or failed, hooks aside) than the
 *     preload counted test starts (a mapped counter or synchronous appends, never lost).
 * Events are no evidence against it: under load Bun 1.4.4 loses the tail of a
 * normal run's events (measured: the `end` of a 2.6 s last test; the `start`
 * of a file's second test, though the run finished and wrote the end mark),
 * and a lost tail looks the same as a test that stopped the process.
 */
function junitDisagreement(ev: ShardEvidence, junit: BunJUnitFile[], code: number): string | null {
  const ran = junit.flatMap((f) =>
    f.tests.filter((t) => !isHook(t) && (t.status === "passed" || t.status === "failed")),
  );
  const bailedOnFailure =
    ev.bail === true && (code === 1 || junit.some((f) => f.tests.some((t) => t.status === "failed")));
  if (ev.finishedNormally === false && !bailedOnFailure) return "the child preload's end-of-run mark is missing";
  if (ev.testsStarted !== undefined && ran.length > ev.testsStarted) {
    return `it lists ${ran.length} tests that ran, the child preload counted ${ev.testsStarted} test starts`;
  }
  return null;
}

/**
 * A shard that did not end normally: per-test data from events where there is
 * some, one synthetic entry per file where there is none.
 *
 * Something was in flight when it ended: a test (phase `running`), or, when
 * no test was running, code outside tests. Bun runs files in plan order, so
 * that code belongs to the last file with found tests (a hook: "afterAll
 * hook" once all its tests ended, "beforeAll hook" before its first, "hook
 * between tests" otherwise) or, when that file had not registered a test
 * yet, to the first file without found tests (it was loading). The entry in
 * flight gets the ending's status and the time since the shard's last test
 * ended (or the shard's whole time); the files after it are `never-started`.
 */
function interrupted(ev: ShardEvidence, base: Base, how: Interruption): ShardResult {
  const ending = endingOf(how);
  const { status, reason } = ending;
  const tests: TestResult[] = [];
  let usedEvents = false;
  const byFile = eventsByFile(ev.events?.tests ?? []);
  const flight = flightOf(ev, base, ending, byFile);
  let inFlightAssigned = flight.assigned;
  for (const [at, file] of ev.files.entries()) {
    const found = byFile.get(file) ?? [];
    if (found.length === 0) {
      const { entry, takesFlight } = fileWithoutEvents(ev, file, at, flight, ending, inFlightAssigned);
      if (takesFlight) inFlightAssigned = true;
      tests.push(entry);
      continue;
    }
    usedEvents = true;
    for (const t of found) tests.push(eventEntry(t, flight.reading, ending, flight.overclaimed));
    // Starts beyond the file's received `found` events (the rest of its plan was lost).
    if (flight.reading.unnamed.has(file)) tests.push(unnamedEntry(file, flight.reading, ending, false, flight.idleMs));
    if (!inFlightAssigned && !flight.loadingInFlight && file === flight.lastLoaded) {
      inFlightAssigned = true;
      // The end mark says Bun finished: no hook was in flight. The entry stands for the missing report.
      if (ending.reachedEnd)
        tests.push(hookEntry(file, "(Bun's JUnit report)", status, { type: ending.failure, message: reason }, 0));
      else tests.push(hookInFlight(file, found, status, ending.failure, reason, flight.idleMs));
    }
  }
  const unread = unreadEntry(ev, flight.lastLoaded, reason);
  if (unread) tests.push(unread);
  return { ...base, status, reason, testSource: usedEvents ? "events" : "synthetic", tests };
}

/** Each file's event tests in event order, grouped once (one filter per file was files × tests). */
function eventsByFile(eventTests: readonly EventTest[]): Map<string, EventTest[]> {
  const byFile = new Map<string, EventTest[]>();
  for (const t of eventTests) {
    const tests = byFile.get(t.file);
    if (tests === undefined) byFile.set(t.file, [t]);
    else tests.push(t);
  }
  return byFile;
}

/** What {@link interrupted} knows, before it lists the files, of what was in flight (docs/reports.md). */
interface Flight {
  /** The event channel was connected and carried tests. */
  haveEvents: boolean;
  /** How long the code in flight (not a test) had run: since the last test ended, or the whole shard. */
  idleMs: number;
  /** The last planned file with found tests. */
  lastLoaded: string | undefined;
  /** The start count against the events (start-count.ts): the tests whose events were lost, the one in flight. */
  reading: StartReading;
  /** The events claim more starts than the count, which cannot lose one: a test wrote them. */
  overclaimed: boolean;
  /** A test (or starts of lost events) was in flight, so no file's code outside tests was. */
  assigned: boolean;
  /** The position of the file that was loading when the shard ended, or -1. */
  loadingAt: number;
  /** That file's top-level code was in flight, not a hook of the file before it. */
  loadingInFlight: boolean;
}

/** The {@link Flight} of a shard that did not end normally: the start count, the last loaded file, the file loading. */
function flightOf(ev: ShardEvidence, base: Base, ending: EndingFacts, byFile: ReadonlyMap<string, unknown>): Flight {
  const eventTests = ev.events?.tests ?? [];
  // A loop, not Math.min(...ends): a spread of a million arguments overflows the stack.
  let idleMs = base.durationMs;
  for (const t of eventTests) if (t.sinceEndMs !== undefined && t.sinceEndMs < idleMs) idleMs = t.sinceEndMs;
  const lastLoaded = [...ev.files].reverse().find((file) => byFile.has(file));
  const connected = ev.events?.connected === true;
  const reading = readStarts({
    tests: eventTests,
    files: ev.files,
    testsStarted: connected ? ev.testsStarted : undefined,
    filesStarted: connected && ev.filesStarted ? new Set(ev.filesStarted) : undefined,
    concurrent: ev.events?.concurrent === true,
    reachedEnd: ending.reachedEnd,
  });
  // The count cannot lose a start; events that claim more than it (beyond the tests still running,
  // whose start Bun sends before the preload's beforeEach counts it) were written by a test.
  const runningNow = eventTests.filter((t) => t.state === "running").length;
  const overclaimed = connected && reading.counted > 0 && reading.carried - runningNow > reading.counted;
  const assigned = reading.inFlight.size > 0 || reading.endLost.size > 0 || reading.unnamed.size > 0;
  // In an --isolate batch the preload marks each file as it begins to load: when the last one
  // begun found no test, its top-level code was in flight, not a hook of the file before it.
  const loading = ev.filesLoaded ? ev.files[Math.min(ev.filesLoaded, ev.files.length) - 1]! : undefined;
  const loadingAt = loading === undefined || byFile.has(loading) || assigned ? -1 : ev.files.indexOf(loading);
  const loadingInFlight = loadingAt >= 0 && (lastLoaded === undefined || ev.files.indexOf(lastLoaded) < loadingAt);
  const haveEvents = connected && eventTests.length > 0;
  return { haveEvents, idleMs, lastLoaded, reading, overclaimed, assigned, loadingAt, loadingInFlight };
}

/**
 * The entry of a planned file with no received `found` event, first match
 * wins (docs/reports.md, "What was in flight when a shard ended" and "When
 * the last events are lost"):
 *  1. tests started in it (its file mark, the count) and every event of it was lost: one entry for them;
 *  2. it registered no test before the next file of the batch began to load: an empty file;
 *  3. with events, once something else was in flight: `never-started` (it had not loaded);
 *  4. otherwise it was in flight (loading, or no events to say): the ending's status, and
 *     `takesFlight`; the time since the last test ended when nothing was in flight before.
 */
function fileWithoutEvents(
  ev: ShardEvidence,
  file: string,
  at: number,
  flight: Flight,
  ending: EndingFacts,
  assigned: boolean,
): { entry: TestResult; takesFlight: boolean } {
  if (flight.reading.unnamed.has(file)) {
    // Tests started here (its file mark, the count), and every event of the file was lost.
    return { entry: unnamedEntry(file, flight.reading, ending, true, flight.idleMs), takesFlight: false };
  }
  if (flight.loadingInFlight && at < flight.loadingAt && flight.haveEvents) {
    // Loaded and registered no test before the next file began: as at a normal end.
    return { entry: emptyFile(ev, file, "the next file of the batch had begun to load"), takesFlight: false };
  }
  if (flight.haveEvents && assigned) {
    const message = `never started: the file had not loaded when the shard ended (${ending.reason})`;
    return { entry: synthetic(file, "never-started", { type: "never-started", message }), takesFlight: false };
  }
  const note = flight.haveEvents
    ? "; it was loading when the shard ended"
    : !ev.events?.connected
      ? "; per-test data is missing (no event channel)"
      : "";
  const failure = { type: ending.failure, message: ending.reason + note };
  return { entry: synthetic(file, ending.status, failure, assigned ? 0 : flight.idleMs), takesFlight: true };
}

/**
 * The entry of an event test of a shard that did not end normally, first
 * match wins (docs/reports.md, "When the last events are lost" and "What a test can forge"):
 *  1. a passing end with its start, events claiming more starts than the count: not a pass;
 *  2. an end with its start: Bun's status;
 *  3. it started (by its event or the count): in flight, or its outcome unknown (start-count.ts);
 *  4. otherwise `never-started`, saying so when its passing end came without a start.
 */
function eventEntry(t: EventTest, reading: StartReading, ending: EndingFacts, overclaimed: boolean): TestResult {
  const forged = endWithoutStart(t);
  const started = t.state === "ended" && !forged ? undefined : startedEntry(t, reading, ending);
  if (t.state === "ended" && t.status === "passed" && !forged && overclaimed) return untrustedPass(t, reading);
  if (t.state === "ended" && t.status && !forged) return fromEvent(t, t.status);
  if (started) return started;
  const message = `never started: ${forged ? NO_START : ""}${ending.reason}`;
  return fromEvent(t, "never-started", { type: "never-started", message });
}

/** A frame too large to read may have been a test's found: an entry says a test may be missing, never passes it over. */
function unreadEntry(ev: ShardEvidence, lastLoaded: string | undefined, reason: string): TestResult | null {
  const unread = ev.events?.unreadFrames ?? 0;
  if (!(unread > 0)) return null;
  const file = lastLoaded ?? ev.files[0]!;
  const message = `${unread === 1 ? "an inspector event was" : `${unread} inspector events were`} too large to read: a test of this shard may be missing from its entries (${reason})`;
  return hookEntry(file, "(unreadable inspector event)", "failed", { type: "unreadable-event", message }, 0);
}

/** Why a test with a passing `end` and no `start` is never-started (start-count.ts endWithoutStart). */
const NO_START = "its passing end event came without a start event, which Bun never sends (not taken as Bun's); ";

/** The entry for code outside tests that was running in `file` when the shard ended (no test was). */
function hookInFlight(
  file: string,
  found: EventTest[],
  status: TestStatus,
  failureType: FailureKind,
  reason: string,
  ms: number,
): TestResult {
  const ended = found.filter((t) => t.state === "ended").length;
  const [name, where] =
    ended === found.length
      ? [
          "afterAll hook",
          "every test of the file had ended: an afterAll hook was running, or the next file was loading before it registered a test",
        ]
      : ended === 0
        ? [
            "beforeAll hook",
            "no test of the file had started: a beforeAll hook was running, or the file was still loading",
          ]
        : [
            "hook between tests",
            "between two tests of the file: a beforeAll or afterAll hook of a describe block was running",
          ];
  return hookEntry(
    file,
    name,
    status,
    { type: failureType, message: `in flight when the shard ended after running ${seconds(ms)}: ${reason} (${where})` },
    ms,
  );
}

/** A shard that reached its end having registered no test: every file an empty file (docs/reports.md). */
function noTests(ev: ShardEvidence, base: Base): ShardResult {
  const tests = ev.files.map((file) => emptyFile(ev, file));
  const note = emptyFilesNote(ev, ev.files);
  const passes = emptyFilesPass(ev);
  const reason = passes ? `passed; ${note}` : note;
  return { ...base, status: passes ? "passed" : "failed", reason, testSource: "synthetic", tests };
}

/** A shard result without a process behind it: every file one synthetic entry with the ending's status. */
function withoutProcess(
  shard: { index: number; slug: string; files: string[] },
  how: Interruption & { kind: "never-started" | "skipped-by-diff" | "unsupervised" },
): ShardResult {
  const { status, failure, reason } = endingOf(how);
  return {
    index: shard.index,
    slug: shard.slug,
    files: shard.files,
    status,
    exitCode: null,
    signal: null,
    killedBy: null,
    durationMs: 0,
    startedAt: null,
    logPath: null,
    logIncomplete: false,
    leftovers: [],
    reason,
    testSource: "synthetic",
    tests: shard.files.map((file) => synthetic(file, status, { type: failure, message: reason })),
  };
}

/**
 * The result of a shard shardguard itself failed to supervise (an error of
 * ours, not of the child): `crashed`, never `passed`, one synthetic entry per
 * file naming the error.
 */
export function supervisionFailed(
  shard: { index: number; slug: string; files: string[] },
  message: string,
): ShardResult {
  return withoutProcess(shard, { kind: "unsupervised", error: message });
}

/**
 * The result of a shard that never started (queued, still starting, or the
 * run was cancelled first): `never-started`, one synthetic entry per file
 * naming `reason`. `logPath` when a log was opened before the start failed.
 */
export function neverStarted(
  shard: { index: number; slug: string; files: string[] },
  reason: string,
  logPath: string | null = null,
): ShardResult {
  return { ...withoutProcess(shard, { kind: "never-started", reason }), logPath };
}

/**
 * The result of a shard a preset's diff selection left out: never spawned,
 * a success for the exit code (docs/reports.md), never conflated with never-started.
 */
export function skippedByDiff(shard: { index: number; slug: string; files: string[] }, reason: string): ShardResult {
  return withoutProcess(shard, { kind: "skipped-by-diff", reason });
}

/**
 * Stand-in entries for the planned files of `shard` that have no test entry
 * (`covered` lists the files that do), so every planned file appears in
 * every report even for a result built outside {@link decideShard} (an
 * embedder's, an older report's). Each carries the shard's status; a
 * `failed` shard's stand-in is a "no-tests" failure: the file had no tests
 * or did not load (ShardResult.status in report-model.ts).
 */
export function standInsFor(shard: ShardResult, covered: ReadonlySet<string>): TestResult[] {
  return shard.files
    .filter((file) => !covered.has(file))
    .map((file) =>
      synthetic(
        file,
        shard.status,
        shard.status === "failed" ? { type: "no-tests", message: shard.reason } : undefined,
      ),
    );
}
