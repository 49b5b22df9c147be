/**
 * The evidence the verdict (verdict.ts) decides from: what the process did,
 * what the inspector events say, and Bun's JUnit, each reduced to plain
 * data by the layers that collect it (exec/, events/).
 */
import type { AttemptFailure, Failure, TestStatus } from "./report-model.ts";
import type { BunJUnitFile } from "./bun-junit.ts";

/** Per-test state from inspector events, already reduced to what the verdict needs. */
export interface EventTest {
  /** Describe path joined with " > ". */
  name: string;
  /** Relative to the run root. */
  file: string;
  line?: number;
  /**
   * True when the test was defined through a helper module (its `found` url
   * is not its file): Bun's lines for it, in events and in its JUnit, are
   * the helper's, so no line is reported (events/attribution.ts).
   */
  viaHelper?: boolean;
  /** `found` = never started; `running` = started, no end seen. */
  state: "found" | "running" | "ended";
  /** Final status when `state` is `ended`. */
  status?: TestStatus;
  /** Number of `start` events. */
  attempts: number;
  /**
   * Position in the order Bun runs the shard's tests (events/run-order.ts:
   * depth first, as declared; `found` events arrive breadth first); absent
   * when unknown, and found order is taken.
   */
  runOrder?: number;
  durationMs: number;
  /** For a running test: ms since its last start, on the runner's clock. */
  runningForMs?: number;
  /** For an ended test: ms since its end arrived, on the runner's clock. */
  sinceEndMs?: number;
  failure?: Failure;
  /** Errors of attempts that were followed by another attempt. */
  attemptFailures: AttemptFailure[];
}

/** What the event channel delivered for one shard. */
export interface EventEvidence {
  /** True when the channel was established and tests were released. */
  connected: boolean;
  tests: EventTest[];
  /** Errors not attributable to a test (load errors), by file when known; `type` is the error's name as Bun sent it (free text). */
  looseErrors: { file: string | null; message: string; type: string }[];
  /**
   * Frames the channel could not read at all (events/frames.ts
   * MAX_KEPT_BYTES): each may have been a test's `found`, so a killed
   * shard's entries may lack a test. Absent or 0 when none.
   */
  unreadFrames?: number;
  /** True when a test started while another was running (`test.concurrent`, `--concurrent`). */
  concurrent?: boolean;
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
  /** The child was stopped (SIGSTOP, state T) when SIGTERM went out, and was sent SIGCONT. */
  stoppedAtSigterm?: boolean;
  /** The kernel's OOM killer ended processes while it ran: how many, and whether the counter was the shard's cgroup's own or the runner's, shared with concurrent shards. */
  oomKills?: { count: number; scope: "shard" | "runner" };
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
  /**
   * True when Bun's JUnit was there but past the read limit (results/junit-shrink.ts):
   * a run that reached its end is then `failed` ("failed to read Bun's JUnit"), not `crashed`.
   */
  junitOverLimit?: boolean;
  events: EventEvidence | null;
  /** `--pass-with-no-tests` among Bun's flags: under `emptyFiles` "fail", an empty file still passes with it. */
  passWithNoTests: boolean;
  /**
   * How a file that registers no tests is judged (the `empty-files` setting):
   * "pass" (absent) reports it as an empty file, as plain `bun test` exits 0
   * for it on every supported Bun; "fail" makes it a failure.
   */
  emptyFiles?: "pass" | "fail";
  /**
   * True when the run filters tests by name (`-t`). Bun then exits 1 for a
   * file where no test matches ("regex matched 0 tests"), with a complete
   * JUnit in which every test is skipped; that is not a failure of the file.
   */
  nameFilter?: boolean;
  /**
   * True when the run stops at a failure (`--bail`). Bun then leaves the
   * unreached tests and files out of its JUnit and skips the global afterAll,
   * so the end-of-run mark is missing (measured on Bun 1.4.4).
   */
  bail?: boolean;
  /**
   * Set when this Bun's JUnit lists each attempt of a retried test as a
   * testcase of its own (Bun 1.3.x, results/bun-capabilities.ts):
   * `maxAttempts` is the run's retry count + 1, null when unknown.
   */
  junitAttempts?: { maxAttempts: number | null };
  /**
   * Test starts counted by the child preload's synchronous marks (not lossy
   * like events); undefined when unknown.
   */
  testsStarted?: number;
  /**
   * Planned files in which the child preload marked a test start (its `f`
   * marks, exec/marks.ts), in any order; undefined when unknown. A file here
   * ran tests even when none of its events arrived.
   */
  filesStarted?: string[];
  /**
   * Files of an `--isolate` batch that began to load, in plan order (the
   * preload's synchronous "l" marks, exec/marks.ts); undefined or 0 outside
   * such batches. The last of them was in flight when the child ended.
   */
  filesLoaded?: number;
  /**
   * True when the child preload's global afterAll ran: Bun reached the normal
   * end of the run (it does not run after a call to `process.exit`). Undefined when unknown.
   */
  finishedNormally?: boolean;
  /**
   * True when the marks file was deleted while the shard ran (a test removed
   * the output directory): an end mark written after that is lost, so a
   * missing one proves nothing either way.
   */
  marksDeleted?: boolean;
  /**
   * The coverage threshold Bun enforces (`coverageThreshold 0.9`), from the
   * project's bunfig.toml and flags; undefined when Bun will not fail the
   * run on coverage. Bun then exits 1 with every test passed when coverage
   * is below it (exec/coverage.ts).
   */
  coverageThreshold?: string;
  /**
   * Bun's own description of an error outside any test, cut from the shard's
   * log. Used only as the message of a load failure when no event carried
   * one (Bun sends no event for an unresolvable import, and a load-time throw
   * often exits before its event is sent); never as evidence for a verdict.
   */
  consoleError?: string;
  /** The shard's notes (ShardResult.notes): what the runner could not take from its evidence. */
  notes?: string[];
  timeoutMs: number;
  graceMs: number;
  logPath: string | null;
  logIncomplete: boolean;
}
