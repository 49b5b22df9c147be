/** The evidence verdict.ts decides from, reduced to plain data by the layers that collect it (exec/, events/). */
import type { AttemptFailure, Failure, TestStatus } from "./report-model.ts";
import type { BunJUnitFile } from "./bun-junit.ts";

/** Per-test state from inspector events, already reduced to what the verdict needs. */
export interface EventTest {
  /** Describe path joined with " > ". */
  name: string;
  /** Relative to the run root. */
  file: string;
  line?: number;
  /** Defined through a helper module: Bun's lines are the helper's, so none is reported (events/attribution.ts). */
  viaHelper?: boolean;
  /** `found` = never started; `running` = started, no end seen. */
  state: "found" | "running" | "ended";
  /** Final status when `state` is `ended`. */
  status?: TestStatus;
  /** Number of `start` events. */
  attempts: number;
  /** Position in Bun's run order (events/run-order.ts); absent when unknown, then found order is taken. */
  runOrder?: number;
  durationMs: number;
  /** For a running test: time since its last start, runner's clock. */
  runningForMs?: number;
  /** For an ended test: time since its end arrived, runner's clock. */
  sinceEndMs?: number;
  failure?: Failure;
  /** Errors of attempts that another attempt followed. */
  attemptFailures: AttemptFailure[];
}

/** What the event channel delivered for one shard. */
export interface EventEvidence {
  /** True when the channel was established and tests were released. */
  connected: boolean;
  tests: EventTest[];
  /** Errors not attributable to a test (load errors); `type` is Bun's error name (free text). */
  looseErrors: { file: string | null; message: string; type: string }[];
  /** Frames too large to read (events/frames.ts): each may have been a `found`, so entries may lack a test. */
  unreadFrames?: number;
  /** A test started while another was running (`test.concurrent`, `--concurrent`). */
  concurrent?: boolean;
}

/** How the shard's process ended, or that it never started. */
export interface ProcessFacts {
  started: boolean;
  /** Only when `started` is false. */
  notStartedReason?: string;
  exitCode: number | null;
  signal: string | null;
  killedBy: "timeout" | "cancel" | null;
  escalated: boolean;
  /** The child was stopped (SIGSTOP) when SIGTERM went out, and was sent SIGCONT. */
  stoppedAtSigterm?: boolean;
  /** OOM kills while it ran; `scope` "runner" when the counter was shared with concurrent shards. */
  oomKills?: { count: number; scope: "shard" | "runner" };
  durationMs: number;
  startedAt: string | null;
  /** The cancelling signal, for messages. */
  cancelSignal?: string;
}

/** Everything {@link decideShard} needs. Times in ms. */
export interface ShardEvidence {
  index: number;
  slug: string;
  files: string[];
  process: ProcessFacts;
  /** Null when Bun wrote none or it could not be parsed. */
  junit: BunJUnitFile[] | null;
  /** Why the JUnit is unusable, when it is. */
  junitProblem?: string;
  /** Bun's JUnit was past the read limit (junit-shrink.ts): a run that reached its end is `failed`, not `crashed`. */
  junitOverLimit?: boolean;
  events: EventEvidence | null;
  /** `--pass-with-no-tests`: under `emptyFiles` "fail", an empty file still passes with it. */
  passWithNoTests: boolean;
  /** The `empty-files` setting; "pass" (absent) matches plain `bun test`, which exits 0 for an empty file. */
  emptyFiles?: "pass" | "fail";
  /** `-t` given: Bun exits 1 for a file where no test matches, with every test skipped; not a failure. */
  nameFilter?: boolean;
  /** `--bail`: Bun drops unreached tests from its JUnit and skips the global afterAll, so no end mark. */
  bail?: boolean;
  /** Set when this Bun's JUnit lists each retry as its own testcase (bun-capabilities.ts); null when unknown. */
  junitAttempts?: { maxAttempts: number | null };
  /** Test starts from the preload's synchronous marks (not lossy like events); undefined when unknown. */
  testsStarted?: number;
  /** Files where the preload marked a test start (exec/marks.ts): they ran tests even without events. */
  filesStarted?: string[];
  /** Files of an `--isolate` batch that began to load (exec/marks.ts); the last was in flight at the end. */
  filesLoaded?: number;
  /** The preload's global afterAll ran: Bun reached the normal end (not after `process.exit`). */
  finishedNormally?: boolean;
  /** A test deleted the marks file, so a missing end mark proves nothing. */
  marksDeleted?: boolean;
  /** The coverage threshold Bun enforces: below it Bun exits 1 with every test passed (exec/coverage.ts). */
  coverageThreshold?: string;
  /** Bun's text for an error outside any test, from the log: a load failure's message only, never evidence. */
  consoleError?: string;
  /** ShardResult.notes. */
  notes?: string[];
  timeoutMs: number;
  graceMs: number;
  logPath: string | null;
  logIncomplete: boolean;
}
