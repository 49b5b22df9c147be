/**
 * The result model: the one definition of what a run produced.
 *
 * Every reporter (JUnit, JSON, console) consumes these types and nothing else.
 * The zod schemas are the source of truth; `docs/report.schema.json` is
 * generated from {@link RunReportSchema} (see `runner/report/json-schema.ts`)
 * and a test checks that the committed file matches.
 *
 * Units: every duration is in milliseconds (`…Ms`), every timestamp is an
 * ISO-8601 string in UTC.
 */
import { z } from "zod";
import { FAILURE_KINDS, REPORT_SCHEMA_VERSION, SHARD_STATUSES, TEST_STATUSES } from "./codes.ts";

// The constants and the summary, for every importer of the model (codes.ts has them without zod).
export {
  EXIT,
  emptySummary,
  FAILURE_KINDS,
  REPORT_SCHEMA_VERSION,
  SHARD_STATUSES,
  SUCCESSFUL_SHARD_STATUSES,
  summarize,
  TEST_STATUSES,
} from "./codes.ts";

/** A shard's final state (the list and what each means: codes.ts, SHARD_STATUSES). */
export const ShardStatusSchema = z.enum(SHARD_STATUSES);
export type ShardStatus = z.infer<typeof ShardStatusSchema>;

/** A test's final state (codes.ts, TEST_STATUSES). */
export const TestStatusSchema = z.enum(TEST_STATUSES);
export type TestStatus = z.infer<typeof TestStatusSchema>;

/** What a failure entry stands for (the list and what each means: codes.ts, FAILURE_KINDS). */
export const FailureKindSchema = z
  .enum(FAILURE_KINDS)
  .describe('What the failure stands for (docs/reports.md, "Failure kinds"); Bun\'s name for the error is errorName.');
export type FailureKind = z.infer<typeof FailureKindSchema>;

/** The name of the error Bun reported: free text a test controls (`Error.name`), so never a kind. */
const ErrorNameSchema = z
  .string()
  .describe(
    'The error\'s name as Bun reported it (its JUnit failure type, its event\'s error name), e.g. "AssertionError", "TypeError"; free text a test can set. Absent when Bun named none.',
  );

/** Why a test did not pass: the message is one human sentence or Bun's error text. */
export const FailureSchema = z.object({
  type: FailureKindSchema,
  errorName: ErrorNameSchema.optional(),
  message: z.string(),
  /** Longer text (stack, Bun's failure body); may be capped. */
  details: z.string().optional(),
});
export type Failure = z.infer<typeof FailureSchema>;

/** One failed attempt of a test that was retried (`--retry N`). */
export const AttemptFailureSchema = z.object({
  type: FailureKindSchema,
  errorName: ErrorNameSchema.optional(),
  message: z.string(),
});
export type AttemptFailure = z.infer<typeof AttemptFailureSchema>;

export const TestResultSchema = z.object({
  /** Test name with its describe path, joined by " > " (outer > inner > test). */
  name: z.string(),
  /** File path relative to the run root, with forward slashes. */
  file: z.string(),
  line: z.number().int().nonnegative().optional(),
  status: TestStatusSchema,
  /** Wall time of the final attempt; 0 when it never ran. */
  durationMs: z.number().nonnegative(),
  failure: FailureSchema.optional(),
  /** Number of attempts after the first (0 when it ran once). */
  retries: z.number().int().nonnegative().default(0),
  /** True when at least one attempt failed and the final one passed. */
  flaky: z.boolean().default(false),
  /** Failed attempts before the final one (for `<flakyFailure>`). */
  attemptFailures: z.array(AttemptFailureSchema).default([]),
  /** True when this entry stands for a whole file without per-test data. */
  synthetic: z.boolean().default(false),
});
export type TestResult = z.infer<typeof TestResultSchema>;

/**
 * A process that was still alive when its shard ended (a leaked grandchild)
 * and was SIGKILLed by the sweep, found by its environment cookie.
 */
export const EscapeeSchema = z.object({
  pid: z.number().int().positive(),
  /** Command line, cut to 200 characters. */
  command: z.string(),
  /** True when it had left the shard's process group (setsid, double fork): only the cookie sweep could find it. */
  leftGroup: z.boolean().default(false),
});
export type EscapeeRecord = z.infer<typeof EscapeeSchema>;

export const ShardResultSchema = z.object({
  /** 1-based position in the plan (in a slice's report: within the slice; a merge renumbers in plan order). */
  index: z.number().int().positive(),
  /** Stable, filesystem-safe name derived from the shard's files. */
  slug: z.string(),
  /** Planned files, relative to the run root. */
  files: z.array(z.string()).min(1),
  status: ShardStatusSchema,
  /** The child's exit code; null when it ended by a signal or never ran. */
  exitCode: z.number().int().nullable(),
  /** The signal that ended the child (e.g. "SIGKILL"); null otherwise. */
  signal: z.string().nullable(),
  /** Why shardguard signalled the process group before the child exited ("timeout": the wall-clock deadline; "cancel": SIGINT/SIGTERM to the run, or a failed event handshake); null when it did not. */
  killedBy: z.enum(["timeout", "cancel"]).nullable(),
  /** From spawn to exit; 0 for shards that never started. */
  durationMs: z.number().nonnegative(),
  startedAt: z.string().nullable(),
  /** Path of the full child output on disk; null when it never started. */
  logPath: z.string().nullable(),
  /** True when the log may miss output: it could not be opened, reached the file size limit, or its disk was full when the shard ended. */
  logIncomplete: z.boolean().default(false),
  /** One human sentence, e.g. "killed after 1800 s wall-clock timeout". */
  reason: z.string(),
  /**
   * What the runner could not take from the shard's evidence as it came,
   * one sentence each: inspector events the schema rejected or too large to
   * read, error events left out beyond the kept ones, events lost. Absent
   * when there is none. They do not change the status; the entries say
   * what they cost (docs/reports.md, "Shard notes").
   */
  notes: z.array(z.string()).optional(),
  /** Descendants still alive when the shard's main process ended (leaks), killed by the sweep. */
  leftovers: z.array(EscapeeSchema).default([]),
  /**
   * What report.html's timeline draws: the job slot that ran the shard and
   * when its kill signals went out and its process group was gone, in ms
   * after its spawn (`startedAt`, the clock of `durationMs`). Absent for a
   * shard that never started, and in reports of earlier versions.
   */
  timeline: z
    .object({
      /** 1-based job slot (of `settings.jobs`) held from the spawn until the group was gone. */
      slot: z.number().int().positive(),
      /** SIGTERM to the process group (deadline or cancel); null when none was sent. */
      sigtermMs: z.number().nonnegative().nullable(),
      /** SIGKILL to the group while the child still ran (grace expired, or a second cancel); null when none was. */
      sigkillMs: z.number().nonnegative().nullable(),
      /** The child exited and its group was SIGKILLed and swept. */
      goneMs: z.number().nonnegative(),
    })
    .optional(),
  /**
   * What the shard's whole process tree cost (the child, its descendants,
   * escapees the sweep killed), of its last attempt; absent when it never
   * started. `wallMs`: spawn to the tree gone, ms. `cpuUserMs`,
   * `cpuSystemMs`: CPU time in ms, null when not measured. `peakRssBytes`:
   * peak resident memory in bytes, null when not measured. `method`:
   * `cgroup` (a cgroup v2 group per shard: CPU exact), `proc-sampling`
   * (/proc read at a bounded rate) or `none`; `precision`: one sentence on
   * how exact the figures are (docs/reports.md, "Resources").
   */
  resources: z
    .object({
      wallMs: z.number().nonnegative(),
      cpuUserMs: z.number().nonnegative().nullable(),
      cpuSystemMs: z.number().nonnegative().nullable(),
      peakRssBytes: z.number().int().nonnegative().nullable(),
      method: z.enum(["cgroup", "proc-sampling", "none"]),
      precision: z.string(),
    })
    .optional(),
  /**
   * The named resources the shard held while it ran (the union of its files'
   * `resources`, sorted). Present, with `exclusive`, on every shard of a run
   * that set `resources` or `exclusive`; absent otherwise.
   */
  locks: z.array(z.string()).optional(),
  /** The shard ran with no other shard running (a file of it matched `exclusive`). */
  exclusive: z.boolean().optional(),
  /** Milliseconds it waited for its resources with a free slot before it started (or, never started, until the report); absent when it did not wait. */
  waitedMs: z.number().nonnegative().optional(),
  /** What it waited for: "resource NAME", "the running shards to finish (exclusive)", "an exclusive shard to finish". */
  waitedFor: z.array(z.string()).optional(),
  /** Where the per-test entries came from. */
  testSource: z.enum(["junit", "events", "junit+events", "synthetic"]),
  tests: z.array(TestResultSchema),
});
export type ShardResult = z.infer<typeof ShardResultSchema>;
/** What a shard's process tree cost and how it was measured (`ShardResult.resources`). */
export type ShardResources = NonNullable<ShardResult["resources"]>;

/**
 * The plan of a sliced run (docs/sharding.md): every planned shard in plan
 * order with its files and the slice (1-based, of `slices`) that runs it.
 * `hash` is 16 hex digits of SHA-256 over the slice count and the shards'
 * files and slices (runner/plan/slice.ts), the same on every machine that
 * planned the same files the same way.
 */
export const PlanManifestSchema = z.object({
  hash: z.string().regex(/^[0-9a-f]{16}$/),
  /** N of `--shard I/N`. */
  slices: z.number().int().positive(),
  shards: z.array(
    z.object({
      /** 1-based position in the whole plan. */
      index: z.number().int().positive(),
      slug: z.string(),
      files: z.array(z.string()).min(1),
      /** 1-based slice that runs this shard. */
      slice: z.number().int().positive(),
    }),
  ),
});
export type PlanManifest = z.infer<typeof PlanManifestSchema>;

/** `--shard I/N`: this report covers slice `index` of `count`. */
export const SliceSchema = z.object({
  index: z.number().int().positive(),
  count: z.number().int().positive(),
});
export type SliceRef = z.infer<typeof SliceSchema>;

/** What `shardguard merge` read: one entry per slice of the plan, in slice order. */
export const MergedFromSchema = z.object({
  slices: z.array(
    z.object({
      index: z.number().int().positive(),
      /** The slice's own run id; null when the slice reported nothing. */
      runId: z.string().nullable(),
      /** The slice run's exit code (null: unfinished, or nothing reported). */
      exitCode: z.number().int().nullable(),
      /** The directory its report.json was read from; null when none was found. */
      source: z.string().nullable(),
    }),
  ),
});
export type MergedFrom = z.infer<typeof MergedFromSchema>;

/** `--last-failed`: the earlier run whose failed, timed-out, crashed and never-started files this run reran. */
export const RerunOfSchema = z.object({
  runId: z.string(),
  startedAt: z.string(),
  /** Files rerun, relative to the root, in plan order. */
  files: z.array(z.string()),
});
export type RerunOf = z.infer<typeof RerunOfSchema>;

const countsShape = <T extends readonly string[]>(keys: T) =>
  z.object(
    Object.fromEntries(keys.map((k) => [k, z.number().int().nonnegative()])) as {
      [K in T[number]]: z.ZodNumber;
    },
  );

export const SummarySchema = z.object({
  shards: countsShape(SHARD_STATUSES).extend({ total: z.number().int().nonnegative() }),
  tests: countsShape(TEST_STATUSES).extend({
    total: z.number().int().nonnegative(),
    flaky: z.number().int().nonnegative(),
  }),
});
export type Summary = z.infer<typeof SummarySchema>;

export const RunReportSchema = z.object({
  schemaVersion: z.literal(REPORT_SCHEMA_VERSION),
  runId: z.string(),
  /** True once every shard reached a final state and the run ended normally. */
  completed: z.boolean(),
  /** Set when the run was cancelled: "SIGINT" or "SIGTERM". */
  cancelledBy: z.enum(["SIGINT", "SIGTERM"]).nullable(),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
  durationMs: z.number().nonnegative(),
  /** The run's exit code; null while the run is still going. */
  exitCode: z.number().int().nullable(),
  root: z.string(),
  tool: z.object({ name: z.literal("shardguard"), version: z.string() }),
  bun: z.object({
    version: z.string(),
    path: z.string(),
    /** What this Bun lacks that shardguard would use, one sentence each naming the version (docs/bun-behaviour.md); absent when nothing. */
    missing: z.array(z.string()).optional(),
  }),
  settings: z.object({
    jobs: z.number().int().positive(),
    timeoutMs: z.number().int().positive(),
    graceMs: z.number().int().nonnegative(),
    /** Files per shard, or "auto" (batches sized from the timings, docs/sharding.md). */
    filesPerShard: z.union([z.number().int().positive(), z.literal("auto")]),
    bunArgs: z.array(z.string()),
  }),
  summary: SummarySchema,
  /** Set when a preset planned the run: which one, how it was chosen, its tier and diff selection. */
  preset: z
    .object({
      name: z.string(),
      /** How the run reached the preset, e.g. "--preset" or "legacy command line". */
      via: z.string(),
      tier: z.string().nullable(),
      /** The diff selection's one-line reason; null when the preset has no selection. */
      selection: z.string().nullable(),
    })
    .nullable()
    .default(null),
  /** Processes killed by the run-level sweeps: left over by dead earlier runs (at start), and by this run (at the end). */
  sweeps: z
    .object({ staleRuns: z.array(EscapeeSchema), endOfRun: z.array(EscapeeSchema) })
    .default({ staleRuns: [], endOfRun: [] }),
  /**
   * The whole plan, when it was split into slices for several machines
   * (`--shard I/N`) or merged from them: every planned shard with its files
   * and its slice, and a hash of exactly that, so a merge can check that its
   * inputs share one plan and that every planned file was reported.
   */
  plan: PlanManifestSchema.nullable().default(null),
  /** Which slice of {@link plan} this report covers (`--shard I/N`); null for a whole plan. */
  slice: SliceSchema.nullable().default(null),
  /** Set by `shardguard merge`: the slices it read and which reported nothing. */
  merged: MergedFromSchema.nullable().default(null),
  /** Set when the run was `--last-failed`: the run whose non-passing files it reran. */
  rerunOf: RerunOfSchema.nullable().default(null),
  shards: z.array(ShardResultSchema),
});
export type RunReport = z.infer<typeof RunReportSchema>;

/** Reports returned by {@link validReport}: already checked copies. */
const checked = new WeakSet<RunReport>();

/**
 * `RunReportSchema.parse(report)`: a checked deep copy without unknown keys.
 * A report this function returned is handed back as it is, without a second
 * parse: the report writer checks a report once and renders JSON and CTRF
 * from the copy, where each renderer used to parse it again (for 100,000
 * tests ~150 ms and a copy of every test each, bench/README.md). Reports
 * from anywhere else are parsed on every call, so changing a report between
 * two renders is always seen.
 *
 * @throws ZodError when the report does not match the schema
 */
export function validReport(report: RunReport): RunReport {
  if (checked.has(report)) return report;
  const valid = RunReportSchema.parse(report);
  checked.add(valid);
  return valid;
}

/**
 * Checks a value against one schema of the model, as part of a report: a
 * failure throws a ZodError whose issue paths start with `at` (e.g.
 * `["shards", 0, "tests", 41]`), as {@link validReport} would report them.
 */
function checkedPart<T>(schema: z.ZodType<T>, value: unknown, at: readonly (string | number)[]): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new z.ZodError(result.error.issues.map((issue) => ({ ...issue, path: [...at, ...issue.path] })));
}

/**
 * The report without its test entries, checked: {@link RunReportSchema}
 * applied to the report with every shard's `tests` empty; each shard of the
 * result then gets its own `tests` back, unchecked. With {@link validTest}
 * on each entry it checks a report part by part (a report writer streaming
 * 100,000 tests checks each as it renders it, where one parse of the whole
 * report held a checked deep copy of every test, bench/README.md); together
 * they accept exactly what `RunReportSchema` accepts.
 *
 * @throws ZodError when the report without its tests does not match
 */
export function validReportShell(report: RunReport): RunReport {
  const shards: unknown = report.shards;
  const shell = checkedPart(
    RunReportSchema,
    {
      ...report,
      shards: Array.isArray(shards)
        ? shards.map((shard) => ({ ...shard, tests: Array.isArray(shard?.tests) ? [] : shard?.tests }))
        : shards,
    },
    [],
  );
  return { ...shell, shards: shell.shards.map((shard, i) => ({ ...shard, tests: report.shards[i]!.tests })) };
}

/**
 * Test `index` of shard `shardIndex` (both 0-based), checked: a copy with
 * defaults filled in and unknown keys dropped.
 *
 * @throws ZodError (paths from `shards`) when it does not match {@link TestResultSchema}
 */
export function validTest(test: TestResult, shardIndex: number, index: number): TestResult {
  return plainTestCopy(test) ?? checkedPart(TestResultSchema, test, ["shards", shardIndex, "tests", index]);
}

/** The keys {@link plainTestCopy} reads and writes: TestResultSchema's, in its order (a test keeps the two equal). */
export const PLAIN_TEST_KEYS = [
  "name",
  "file",
  "line",
  "status",
  "durationMs",
  "failure",
  "retries",
  "flaky",
  "attemptFailures",
  "synthetic",
] as const;

const TEST_STATUS_SET: ReadonlySet<unknown> = new Set(TEST_STATUSES);
const isCount = (value: unknown) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/**
 * What `TestResultSchema.parse(test)` returns, for the entry nearly every
 * test has (a plain object without attempt failures whose fields are all
 * plainly valid), built by hand; its failure, when it has one, is checked
 * and copied by {@link FailureSchema}. Null for anything else (attempt
 * failures, any field in doubt, another kind of object), which zod then
 * checks: this accepts only entries the schema accepts and returns the copy
 * it would (keys in the schema's order, defaults filled in, unknown keys
 * dropped); test/report-stream.test.ts compares the two. What it buys:
 * util/tuning.ts.
 */
function plainTestCopy(test: unknown): TestResult | null {
  if (typeof test !== "object" || test === null || Object.getPrototypeOf(test) !== Object.prototype) return null;
  const { name, file, line, status, durationMs, failure, retries, flaky, attemptFailures, synthetic } = test as Record<
    string,
    unknown
  >;
  if (typeof name !== "string" || typeof file !== "string" || !TEST_STATUS_SET.has(status)) return null;
  if (typeof durationMs !== "number" || !(durationMs >= 0 && durationMs < Infinity)) return null;
  if ((line !== undefined && !isCount(line)) || (retries !== undefined && !isCount(retries))) return null;
  const failureCopy = failure === undefined ? undefined : FailureSchema.safeParse(failure).data;
  if (failure !== undefined && failureCopy === undefined) return null;
  if (
    (flaky !== undefined && typeof flaky !== "boolean") ||
    (synthetic !== undefined && typeof synthetic !== "boolean")
  )
    return null;
  if (attemptFailures !== undefined && !(Array.isArray(attemptFailures) && attemptFailures.length === 0)) return null;
  const copy = { name, file } as TestResult;
  // An optional key present with the value undefined stays, as in zod's copy.
  if ("line" in (test as object)) copy.line = line as number;
  copy.status = status as TestStatus;
  copy.durationMs = durationMs;
  if ("failure" in (test as object)) copy.failure = failureCopy;
  copy.retries = (retries as number | undefined) ?? 0;
  copy.flaky = (flaky as boolean | undefined) ?? false;
  copy.attemptFailures = [];
  copy.synthetic = (synthetic as boolean | undefined) ?? false;
  return copy;
}

/** Checks a test entry as part of a report: {@link validTest}'s signature. */
export type TestCheck = (test: TestResult, shardIndex: number, index: number) => TestResult;
