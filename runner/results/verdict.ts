/**
 * Verdict rules (docs/reports.md, "Verdict rules"): one shard's evidence to its {@link ShardResult}.
 * Authority: what shardguard did and how the process ended, then Bun's JUnit (written only at a normal end),
 * then inspector events (survive a kill, may lose their tail); console text is never evidence.
 */
import type { BunJUnitFile } from "./bun-junit.ts";
import { emptyFile, emptyFilesNote, emptyFilesPass, type ShardResultWithoutVerdict } from "./entries.ts";
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
 * Decides one shard's status, reason and per-test entries; no I/O; every planned file gets an entry.
 * `ev.junit`'s entries become the result's own, not copied (bench/README.md): do not read it again.
 */
export function decideShard(ev: ShardEvidence): ShardResult {
  const p = ev.process;
  const base = shardBase(ev);
  // docs/reports.md's "Verdict rules", first match wins; 1. never spawned.
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
  // 8. "No tests" needs the end mark: exit 0 without JUnit is also an early `process.exit(0)`.
  if (code === 0 && !anyFound(ev) && ev.finishedNormally === true) {
    return noTests(ev, base);
  }
  // 9-10. Bun's JUnit unusable after the run's end, or anything else (endingWithoutJUnit).
  return interrupted(ev, base, endingWithoutJUnit(ev, code, distrust));
}

/** The fields of a shard's result that come from its evidence as they are, whatever its verdict. */
function shardBase(ev: ShardEvidence): ShardResultWithoutVerdict {
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

/** How a kill, or a signal shardguard did not send, ended the shard; null when it exited by itself. */
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

/** Exit 1 without Bun's JUnit before any test ran: a file failed to load; null otherwise (docs/reports.md). */
function loadFailedShard(ev: ShardEvidence, base: ShardResultWithoutVerdict, code: number): ShardResult | null {
  const eventTests = ev.events?.tests ?? [];
  if (code === 1 && !anyFound(ev)) {
    // Under --bail Bun stopped at the first file (plan order), so the others never started.
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
    // End mark, exit 1, no JUnit, no test run: a file threw after registering tests (docs/reports.md).
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

/** How a shard without a usable JUnit ended when nothing earlier matched (docs/reports.md, "Verdict rules"). */
function endingWithoutJUnit(ev: ShardEvidence, code: number, distrust: string | null): Interruption {
  const noJUnit = distrust
    ? `Bun's JUnit report was not trusted: ${distrust}`
    : (ev.junitProblem ?? "Bun wrote no JUnit report");
  // The end mark proves the run reached its end: what is missing is a usable JUnit.
  if (ev.finishedNormally === true && !distrust && ev.junitProblem !== undefined) {
    // Too large to read is a failure to read it, not a crash.
    const kind = ev.junitOverLimit === true && (code === 0 || code === 1) ? "junit-over-limit" : "junit-unusable";
    return { kind, exitCode: code, problem: ev.junitProblem };
  }
  // The end mark may have gone with a deleted run directory: no early exit is made up.
  if (ev.marksDeleted === true && ev.finishedNormally !== true && (code === 0 || code === 1)) {
    return { kind: "end-unknown", exitCode: code, problem: noJUnit };
  }
  if (code === 0 || code === 1) return { kind: "early-exit", exitCode: code, noJUnit };
  return { kind: "exit-code", exitCode: code, noJUnit };
}

/**
 * Why Bun's JUnit cannot prove a finished run, or null. A test can forge it (docs/reports.md), so it needs the
 * end mark and no more tests run than the preload counted. Events are no evidence against it: Bun loses
 * a normal run's event tail under load (docs/bun-behaviour.md).
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
 * A shard that did not end normally: events' per-test data where there is some, one synthetic entry per file
 * elsewhere; the entry in flight gets the ending's status (docs/reports.md, "What was in flight when a shard ended").
 */
function interrupted(ev: ShardEvidence, base: ShardResultWithoutVerdict, how: Interruption): ShardResult {
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
    // Starts beyond the file's received `found` events: the rest of its plan was lost.
    if (flight.reading.unnamed.has(file)) tests.push(unnamedEntry(file, flight.reading, ending, false, flight.idleMs));
    if (!inFlightAssigned && !flight.loadingInFlight && file === flight.lastLoaded) {
      inFlightAssigned = true;
      // The end mark says Bun finished: no hook was in flight; the entry stands for the missing report.
      if (ending.reachedEnd)
        tests.push(hookEntry(file, "(Bun's JUnit report)", status, { type: ending.failure, message: reason }, 0));
      else tests.push(hookInFlight(file, found, status, ending.failure, reason, flight.idleMs));
    }
  }
  const unread = unreadEntry(ev, flight.lastLoaded, reason);
  if (unread) tests.push(unread);
  return { ...base, status, reason, testSource: usedEvents ? "events" : "synthetic", tests };
}

/** Each file's event tests in event order, grouped once. */
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
  /** How long the code in flight had run: since the last test ended, or the whole shard. */
  idleMs: number;
  /** The last planned file with found tests. */
  lastLoaded: string | undefined;
  /** The start count against the events (start-count.ts). */
  reading: StartReading;
  /** The events claim more starts than the count, which cannot lose one: a test wrote them. */
  overclaimed: boolean;
  /** A test (or lost starts) was in flight, so no file's code outside tests was. */
  assigned: boolean;
  /** The position of the file that was loading when the shard ended, or -1. */
  loadingAt: number;
  /** That file's top-level code was in flight, not a hook of the file before it. */
  loadingInFlight: boolean;
}

/** The {@link Flight} of a shard that did not end normally. */
function flightOf(
  ev: ShardEvidence,
  base: ShardResultWithoutVerdict,
  ending: EndingFacts,
  byFile: ReadonlyMap<string, unknown>,
): Flight {
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
  // Events claiming more starts than the count (beyond tests still running, whose start precedes the
  // preload's count) were written by a test.
  const runningNow = eventTests.filter((t) => t.state === "running").length;
  const overclaimed = connected && reading.counted > 0 && reading.carried - runningNow > reading.counted;
  const assigned = reading.inFlight.size > 0 || reading.endLost.size > 0 || reading.unnamed.size > 0;
  // In an --isolate batch: the last file begun with no test found had its top-level code in flight.
  const loading = ev.filesLoaded ? ev.files[Math.min(ev.filesLoaded, ev.files.length) - 1]! : undefined;
  const loadingAt = loading === undefined || byFile.has(loading) || assigned ? -1 : ev.files.indexOf(loading);
  const loadingInFlight = loadingAt >= 0 && (lastLoaded === undefined || ev.files.indexOf(lastLoaded) < loadingAt);
  const haveEvents = connected && eventTests.length > 0;
  return { haveEvents, idleMs, lastLoaded, reading, overclaimed, assigned, loadingAt, loadingInFlight };
}

/** A planned file with no received `found`, first match wins (docs/reports.md, "When the last events are lost"). */
function fileWithoutEvents(
  ev: ShardEvidence,
  file: string,
  at: number,
  flight: Flight,
  ending: EndingFacts,
  assigned: boolean,
): { entry: TestResult; takesFlight: boolean } {
  if (flight.reading.unnamed.has(file)) {
    return { entry: unnamedEntry(file, flight.reading, ending, true, flight.idleMs), takesFlight: false };
  }
  if (flight.loadingInFlight && at < flight.loadingAt && flight.haveEvents) {
    // Loaded and registered no test before the next file began: empty, as at a normal end.
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

/** An event test of a shard that did not end normally, first match wins (docs/reports.md, "What a test can forge"). */
function eventEntry(t: EventTest, reading: StartReading, ending: EndingFacts, overclaimed: boolean): TestResult {
  const forged = endWithoutStart(t);
  const started = t.state === "ended" && !forged ? undefined : startedEntry(t, reading, ending);
  if (t.state === "ended" && t.status === "passed" && !forged && overclaimed) return untrustedPass(t, reading);
  if (t.state === "ended" && t.status && !forged) return fromEvent(t, t.status);
  if (started) return started;
  const message = `never started: ${forged ? NO_START : ""}${ending.reason}`;
  return fromEvent(t, "never-started", { type: "never-started", message });
}

/** A frame too large to read may have been a found: the entry says a test may be missing. */
function unreadEntry(ev: ShardEvidence, lastLoaded: string | undefined, reason: string): TestResult | null {
  const unread = ev.events?.unreadFrames ?? 0;
  if (!(unread > 0)) return null;
  const file = lastLoaded ?? ev.files[0]!;
  const message =
    `${unread === 1 ? "an inspector event was" : `${unread} inspector events were`} too large to read: ` +
    `a test of this shard may be missing from its entries (${reason})`;
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
          "every test of the file had ended: an afterAll hook was running, or the next file was loading before it " +
            "registered a test",
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
function noTests(ev: ShardEvidence, base: ShardResultWithoutVerdict): ShardResult {
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

/** A shard whose supervision failed (our error, not the child's): `crashed`, one entry per file naming it. */
export function supervisionFailed(
  shard: { index: number; slug: string; files: string[] },
  message: string,
): ShardResult {
  return withoutProcess(shard, { kind: "unsupervised", error: message });
}

/** A shard that never started: `never-started`, one entry per file naming `reason`; `logPath` if one was opened. */
export function neverStarted(
  shard: { index: number; slug: string; files: string[] },
  reason: string,
  logPath: string | null = null,
): ShardResult {
  return { ...withoutProcess(shard, { kind: "never-started", reason }), logPath };
}

/** A shard a preset's diff selection left out: a success for the exit code, never never-started (docs/reports.md). */
export function skippedByDiff(shard: { index: number; slug: string; files: string[] }, reason: string): ShardResult {
  return withoutProcess(shard, { kind: "skipped-by-diff", reason });
}

/**
 * Stand-in entries for the files of `shard` missing from `covered`, so every planned file is reported even for
 * results built elsewhere; each has the shard's status, a `failed` one a "no-tests" failure.
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
