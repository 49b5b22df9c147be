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
 * Rules (issues #2 and #3):
 *  - killed at the deadline → `timed-out`; tests that ended keep their status,
 *    the one in flight is `timed-out`, the rest found but not started are
 *    `never-started`;
 *  - cancelled → `crashed` ("run cancelled"), same per-test split;
 *  - ended by a signal we did not send, or exit 0/1 without the JUnit proof of
 *    a finished run while tests had started → `crashed`;
 *  - exit 1 with no test found and no JUnit → `failed` (the file did not load);
 *  - ended normally → Bun's JUnit is the authority for final statuses, events
 *    add retries, flakiness and lines; a planned file missing from it had no
 *    tests or failed to load, and is `failed` unless `--pass-with-no-tests`;
 *  - nothing shardguard killed is ever `passed`.
 */
import type { BunJUnitFile } from "./bun-junit.ts";
import type { Failure, ShardResult, ShardStatus, TestResult, TestStatus } from "./model.ts";

/** Name used for the one synthetic testcase of a file without per-test data. */
export const WHOLE_FILE = "(whole file)";

/** Per-test state from inspector events, already reduced to what the verdict needs. */
export interface EventTest {
  /** Describe path joined with " > ". */
  name: string;
  /** Relative to the run root. */
  file: string;
  line?: number;
  /** `found` = never started; `running` = started, no end seen. */
  state: "found" | "running" | "ended";
  /** Final status when `state` is `ended`. */
  status?: TestStatus;
  /** Number of `start` events. */
  attempts: number;
  durationMs: number;
  /** For a running test: ms since its last start, on the runner's clock. */
  runningForMs?: number;
  failure?: Failure;
  /** Errors of attempts that were followed by another attempt. */
  attemptFailures: { type: string; message: string }[];
}

/** What the event channel delivered for one shard. */
export interface EventEvidence {
  /** True when the channel was established and tests were released. */
  connected: boolean;
  tests: EventTest[];
  /** Errors not attributable to a test (load errors), by file when known. */
  looseErrors: { file: string | null; message: string; type: string }[];
}

/** How the shard's process ended, or that it never started. */
export interface ProcessFacts {
  started: boolean;
  /** Why it never started (cancelled, spawn error); only when `started` is false. */
  notStartedReason?: string;
  exitCode: number | null;
  signal: string | null;
  killedBy: "timeout" | "cancel" | null;
  escalated: boolean;
  durationMs: number;
  startedAt: string | null;
  /** The cancelling signal, for messages ("SIGINT"). */
  cancelSignal?: string;
}

/** Everything {@link decideShard} needs. Times in ms. */
export interface ShardEvidence {
  index: number;
  slug: string;
  files: string[];
  process: ProcessFacts;
  /** Parsed Bun JUnit; null when Bun wrote none or it could not be parsed. */
  junit: BunJUnitFile[] | null;
  /** Why the JUnit is unusable, when it is. */
  junitProblem?: string;
  events: EventEvidence | null;
  passWithNoTests: boolean;
  /**
   * True when the run filters tests by name (`-t`). Bun then exits 1 for a
   * file where no test matches ("regex matched 0 tests"), with a complete
   * JUnit in which every test is skipped; that is not a failure of the file.
   */
  nameFilter?: boolean;
  /**
   * Test starts counted by the child preload's synchronous marks (not lossy
   * like events); undefined when unknown.
   */
  testsStarted?: number;
  /**
   * True when the child preload's global afterAll ran: Bun reached the normal
   * end of the run (it does not run after a call to `process.exit`). Undefined when unknown.
   */
  finishedNormally?: boolean;
  /**
   * Bun's own description of an error outside any test, cut from the shard's
   * log. Used only as the message of a load failure when no event carried
   * one (Bun sends no event for an unresolvable import, and a load-time throw
   * often exits before its event is sent); never as evidence for a verdict.
   */
  consoleError?: string;
  timeoutMs: number;
  graceMs: number;
  logPath: string | null;
  logIncomplete: boolean;
}

const seconds = (ms: number) => `${+(ms / 1000).toFixed(1)} s`;

/**
 * Decides one shard's status, reason and per-test entries.
 *
 * Pure: no I/O. Every planned file gets at least one test entry, so every
 * planned file appears in every report.
 */
export function decideShard(ev: ShardEvidence): ShardResult {
  const p = ev.process;
  const base = {
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
    leftovers: [],
  };

  if (!p.started) {
    const reason = p.notStartedReason ?? "never started";
    return {
      ...base,
      durationMs: 0,
      startedAt: null,
      status: "never-started",
      reason,
      testSource: "synthetic",
      tests: ev.files.map((file) => synthetic(file, "never-started", { type: "never-started", message: reason })),
    };
  }

  if (p.killedBy === "timeout") {
    const reason =
      `killed after ${seconds(ev.timeoutMs)} wall-clock timeout` +
      (p.escalated && p.signal === "SIGKILL" ? ` (SIGKILL after ${seconds(ev.graceMs)} grace period: SIGTERM was ignored)` : "");
    return interrupted(ev, base, "timed-out", reason, "timed-out", "timeout");
  }
  if (p.killedBy === "cancel") {
    const reason = `run cancelled${p.cancelSignal ? ` (${p.cancelSignal})` : ""}`;
    return interrupted(ev, base, "crashed", reason, "crashed", "crash");
  }
  if (p.signal) {
    return interrupted(ev, base, "crashed", `killed by ${p.signal}, a signal shardguard did not send`, "crashed", "crash");
  }

  const code = p.exitCode ?? -1;
  if (ev.junit) return fromJUnit(ev, base, code, ev.junit);

  const eventTests = ev.events?.tests ?? [];
  // A test that started proves tests were registered, even if its events were lost.
  const anyFound = eventTests.length > 0 || (ev.testsStarted ?? 0) > 0;
  const noJUnit = ev.junitProblem ?? "Bun wrote no JUnit report";
  if (code === 1 && !anyFound) {
    // Bun writes JUnit whenever at least one test was registered; exit 1 with
    // no test found means the file threw or failed to import before any test.
    const tests = ev.files.map((file) => loadFailure(ev, file));
    return { ...base, status: "failed", reason: `a file failed to load (exit 1, no test registered)`, testSource: "synthetic", tests };
  }
  // "No tests" needs proof that the run ended normally: exit 0 without JUnit
  // is also what a `process.exit` with code 0 before any test looks like.
  if (code === 0 && !anyFound && ev.finishedNormally === true) {
    return noTests(ev, base);
  }
  const reason =
    code === 0 || code === 1
      ? `exited ${code} before finishing (${noJUnit}): the run ended early, e.g. a test called process.exit`
      : `exited with code ${code} (${noJUnit})`;
  return interrupted(ev, base, "crashed", reason, "crashed", "crash");
}

type Base = Omit<ShardResult, "status" | "reason" | "testSource" | "tests">;

function synthetic(file: string, status: TestStatus, failure?: Failure): TestResult {
  return {
    name: WHOLE_FILE,
    file,
    status,
    durationMs: 0,
    ...(failure ? { failure } : {}),
    retries: 0,
    flaky: false,
    attemptFailures: [],
    synthetic: true,
  };
}

/**
 * A shard that did not end normally: per-test data from events where there is
 * some, one synthetic entry per file where there is none.
 */
function interrupted(
  ev: ShardEvidence,
  base: Base,
  status: ShardStatus,
  reason: string,
  inFlightStatus: TestStatus,
  failureType: string,
): ShardResult {
  const tests: TestResult[] = [];
  let usedEvents = false;
  const eventTests = ev.events?.tests ?? [];
  const haveEvents = ev.events?.connected === true && eventTests.length > 0;
  // With events, a file without found tests had not loaded yet. Bun loads
  // files in order, so when no test was running the first such file was the
  // one loading (in flight); the files after it never started.
  const anyRunning = eventTests.some((t) => t.state === "running");
  let loadingAssigned = anyRunning;
  for (const file of ev.files) {
    const found = eventTests.filter((t) => t.file === file);
    if (found.length === 0) {
      if (haveEvents && loadingAssigned) {
        tests.push(synthetic(file, "never-started", { type: "never-started", message: `never started: the file had not loaded when the shard ended (${reason})` }));
        continue;
      }
      loadingAssigned = true;
      const note = haveEvents ? "; it was loading when the shard ended" : !ev.events?.connected ? "; per-test data is missing (no event channel)" : "";
      tests.push(synthetic(file, inFlightStatus, { type: failureType, message: reason + note }));
      continue;
    }
    usedEvents = true;
    for (const t of found) {
      if (t.state === "ended" && t.status) {
        tests.push(fromEvent(t, t.status));
      } else if (t.state === "running") {
        const ran = t.runningForMs !== undefined ? ` after running ${seconds(t.runningForMs)}` : "";
        tests.push(
          fromEvent(t, inFlightStatus, {
            type: failureType,
            message: `in flight when the shard ended${ran}: ${reason}`,
            ...(t.failure ? { details: t.failure.message } : {}),
          }),
        );
      } else {
        tests.push(fromEvent(t, "never-started", { type: "never-started", message: `never started: ${reason}` }));
      }
    }
  }
  return { ...base, status, reason, testSource: usedEvents ? "events" : "synthetic", tests };
}

function fromEvent(t: EventTest, status: TestStatus, failure?: Failure): TestResult {
  const flaky = status === "passed" && t.attempts > 1 && t.attemptFailures.length > 0;
  const chosen = failure ?? (status === "failed" ? t.failure ?? { type: "failure", message: "failed" } : undefined);
  return {
    name: t.name,
    file: t.file,
    ...(t.line !== undefined ? { line: t.line } : {}),
    status,
    durationMs: status === "never-started" ? 0 : t.state === "running" ? (t.runningForMs ?? 0) : t.durationMs,
    ...(chosen ? { failure: chosen } : {}),
    retries: Math.max(0, t.attempts - 1),
    flaky,
    attemptFailures: flaky || status !== "passed" ? t.attemptFailures : [],
    synthetic: false,
  };
}

function loadFailure(ev: ShardEvidence, file: string): TestResult {
  const errors = (ev.events?.looseErrors ?? []).filter((e) => e.file === file || (e.file === null && ev.files.length === 1));
  const message =
    errors[0]?.message ??
    (ev.consoleError ? `${ev.consoleError} (from Bun's console output)` : `the file failed before any test was registered (see ${ev.logPath ?? "the log"})`);
  return synthetic(file, "failed", { type: "load-error", message });
}

function noTests(ev: ShardEvidence, base: Base): ShardResult {
  if (ev.passWithNoTests) {
    const tests = ev.files.map((file) => synthetic(file, "skipped", { type: "no-tests", message: "no tests found (--pass-with-no-tests)" }));
    return { ...base, status: "passed", reason: "no tests found; passed because of --pass-with-no-tests", testSource: "synthetic", tests };
  }
  const tests = ev.files.map((file) => synthetic(file, "failed", { type: "no-tests", message: "no tests found" }));
  return { ...base, status: "failed", reason: "no tests found (pass --pass-with-no-tests to bun test to allow it)", testSource: "synthetic", tests };
}

/** Key used to match a JUnit testcase with an event test. */
const matchKey = (file: string, name: string) => `${file}\u0000${name.replace(/[\u0000-\u001f\u007f]/g, "")}`;

function fromJUnit(ev: ShardEvidence, base: Base, code: number, junit: BunJUnitFile[]): ShardResult {
  const byFile = new Map(junit.map((f) => [f.file, f.tests]));
  const events = new Map<string, EventTest>();
  for (const t of ev.events?.tests ?? []) events.set(matchKey(t.file, t.name), t);
  const tests: TestResult[] = [];
  const missing: string[] = [];
  let enriched = false;
  for (const file of ev.files) {
    const fileTests = byFile.get(file);
    if (!fileTests || fileTests.length === 0) {
      missing.push(file);
      const loose = (ev.events?.looseErrors ?? []).some((e) => e.file === file);
      if (loose || code !== 0) tests.push(loadFailure(ev, file));
      else if (ev.passWithNoTests) tests.push(synthetic(file, "skipped", { type: "no-tests", message: "no tests found (--pass-with-no-tests)" }));
      else tests.push(synthetic(file, "failed", { type: "no-tests", message: "no tests found" }));
      continue;
    }
    for (const t of fileTests) {
      const e = events.get(matchKey(t.file, t.name));
      if (!e) {
        tests.push(t);
        continue;
      }
      enriched = true;
      const flaky = t.status === "passed" && e.attempts > 1 && e.attemptFailures.length > 0;
      tests.push({
        ...t,
        ...(t.line === undefined && e.line !== undefined ? { line: e.line } : {}),
        retries: Math.max(0, e.attempts - 1),
        flaky,
        attemptFailures: flaky || t.status === "failed" ? e.attemptFailures : [],
      });
    }
  }
  const anyFailed = tests.some((t) => t.status !== "passed" && t.status !== "skipped" && t.status !== "todo");
  let status: ShardStatus;
  let reason: string;
  const allFilteredOut = tests.length > 0 && tests.every((t) => t.status === "skipped" || t.status === "todo");
  if (code === 1 && ev.nameFilter && missing.length === 0 && allFilteredOut) {
    status = "passed";
    reason = "no test in this shard matches the -t filter (all skipped)";
  } else if (code === 0 && !anyFailed) {
    status = "passed";
    reason = missing.length > 0 ? `passed; no tests in ${missing.join(", ")} (--pass-with-no-tests)` : "all tests passed";
  } else if (code === 0 || code === 1) {
    status = "failed";
    const failedTests = tests.filter((t) => t.status === "failed").length;
    reason =
      failedTests > 0
        ? `${failedTests} test${failedTests === 1 ? "" : "s"} failed`
        : "bun test exited 1 though no test failed (an error between tests)";
    if (!anyFailed) {
      // CI tools count testcases: a failed shard must show a failing one.
      const loose = ev.events?.looseErrors[0]?.message;
      tests.push(synthetic(ev.files[0]!, "failed", { type: "error-between-tests", message: loose ?? reason }));
    }
  } else {
    status = "crashed";
    reason = `exited with code ${code}`;
    tests.push(synthetic(ev.files[0]!, "crashed", { type: "crash", message: reason }));
  }
  return { ...base, status, reason, testSource: enriched ? "junit+events" : "junit", tests };
}

/** A shard result without a process behind it: every file one synthetic entry with `status`. */
function withoutProcess(
  shard: { index: number; slug: string; files: string[] },
  status: ShardStatus,
  testStatus: TestStatus,
  failureType: string,
  reason: string,
): ShardResult {
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
    tests: shard.files.map((file) => synthetic(file, testStatus, { type: failureType, message: reason })),
  };
}

/**
 * The result of a shard shardguard itself failed to supervise (an error of
 * ours, not of the child): `crashed`, never `passed`, one synthetic entry per
 * file naming the error.
 */
export function supervisionFailed(shard: { index: number; slug: string; files: string[] }, message: string): ShardResult {
  return withoutProcess(shard, "crashed", "crashed", "crash", `shardguard could not supervise this shard: ${message}`);
}

/**
 * The result of a shard a preset's diff selection left out: never spawned,
 * a success for the exit code (docs/reports.md), never conflated with never-started.
 */
export function skippedByDiff(shard: { index: number; slug: string; files: string[] }, reason: string): ShardResult {
  return withoutProcess(shard, "skipped-by-diff", "skipped-by-diff", "skipped-by-diff", reason);
}
