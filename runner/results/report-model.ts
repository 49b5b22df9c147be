/**
 * The result model every reporter consumes; the zod schemas are the source of truth for
 * docs/report.schema.json (runner/report/json-schema.ts). Durations in ms, timestamps ISO-8601 UTC.
 */
import { z } from "zod";
import { RunCostSchema, ShardCostSchema, TestCostSchema } from "./cost-model.ts";
import { FAILURE_KINDS, REPORT_SCHEMA_VERSION, SHARD_STATUSES, TEST_STATUSES } from "./codes.ts";

// Re-exported so importers of the model need not know codes.ts (which has them without zod).
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

/** A shard's final state (codes.ts, SHARD_STATUSES). */
export const ShardStatusSchema = z.enum(SHARD_STATUSES);
export type ShardStatus = z.infer<typeof ShardStatusSchema>;

/** A test's final state (codes.ts, TEST_STATUSES). */
export const TestStatusSchema = z.enum(TEST_STATUSES);
export type TestStatus = z.infer<typeof TestStatusSchema>;

/** What a failure entry stands for (codes.ts, FAILURE_KINDS). */
export const FailureKindSchema = z
  .enum(FAILURE_KINDS)
  .describe('What the failure stands for (docs/reports.md, "Failure kinds"); Bun\'s name for the error is errorName.');
export type FailureKind = z.infer<typeof FailureKindSchema>;

/** Bun's error name: free text a test controls (`Error.name`), so never a kind. */
const ErrorNameSchema = z
  .string()
  .describe(
    "The error's name as Bun reported it (its JUnit failure type, its event's error name), e.g. \"AssertionError\", " +
      '"TypeError"; free text a test can set. Absent when Bun named none.',
  );

/** Why a test did not pass: one human sentence or Bun's error text. */
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

/** One test's final result. */
export const TestResultSchema = z.object({
  /** Name with its describe path, joined by " > ". */
  name: z.string(),
  /** Relative to the run root, forward slashes. */
  file: z.string(),
  line: z.number().int().nonnegative().optional(),
  status: TestStatusSchema,
  /** Wall time of the final attempt; 0 when it never ran. */
  durationMs: z.number().nonnegative(),
  failure: FailureSchema.optional(),
  /** Attempts after the first. */
  retries: z.number().int().nonnegative().default(0),
  /** An attempt failed and the final one passed. */
  flaky: z.boolean().default(false),
  /** Failed attempts before the final one (`<flakyFailure>`). */
  attemptFailures: z.array(AttemptFailureSchema).default([]),
  /** Stands for a whole file without per-test data. */
  synthetic: z.boolean().default(false),
  /** Listed in quarantine (docs/history.md): its real status is kept, its failure does not fail the run. */
  quarantined: z.boolean().optional(),
  /** What it spent (docs/cost.md); absent when nothing was charged to it. */
  cost: TestCostSchema.optional(),
});
export type TestResult = z.infer<typeof TestResultSchema>;

/** A leaked descendant still alive when its shard ended, SIGKILLed by the sweep. */
export const EscapeeSchema = z.object({
  pid: z.number().int().positive(),
  /** Command line, cut to 200 characters. */
  command: z.string(),
  /** It left the shard's process group (setsid, double fork): only the cookie sweep finds it. */
  leftGroup: z.boolean().default(false),
});
export type EscapeeRecord = z.infer<typeof EscapeeSchema>;

/** One shard's outcome. */
export const ShardResultSchema = z.object({
  /** 1-based plan position (within a slice's report; a merge renumbers). */
  index: z.number().int().positive(),
  /** Filesystem-safe name derived from the shard's files. */
  slug: z.string(),
  /** Planned files, relative to the run root. */
  files: z.array(z.string()).min(1),
  status: ShardStatusSchema,
  /** Null when it ended by a signal or never ran. */
  exitCode: z.number().int().nullable(),
  /** The signal that ended the child; null otherwise. */
  signal: z.string().nullable(),
  /** Why shardguard signalled the group before the child exited (docs/reports.md); null when it did not. */
  killedBy: z.enum(["timeout", "cancel"]).nullable(),
  /** From spawn to exit; 0 for shards that never started. */
  durationMs: z.number().nonnegative(),
  startedAt: z.string().nullable(),
  /** Full child output on disk; null when it never started. */
  logPath: z.string().nullable(),
  /** The log may miss output (not opened, size limit, disk full). */
  logIncomplete: z.boolean().default(false),
  /** One human sentence, e.g. "killed after 1800 s wall-clock timeout". */
  reason: z.string(),
  /** Evidence the runner could not take, one sentence each (docs/reports.md, "Shard notes"). */
  notes: z.array(z.string()).optional(),
  /** Descendants alive when the main process ended, killed by the sweep. */
  leftovers: z.array(EscapeeSchema).default([]),
  /** report.html's timeline: job slot and signal times, ms after spawn; absent when never started. */
  timeline: z
    .object({
      /** 1-based slot of `settings.jobs`. */
      slot: z.number().int().positive(),
      /** SIGTERM to the group; null when none was sent. */
      sigtermMs: z.number().nonnegative().nullable(),
      /** SIGKILL while the child still ran; null when none was. */
      sigkillMs: z.number().nonnegative().nullable(),
      /** The child exited and its group was swept. */
      goneMs: z.number().nonnegative(),
    })
    .optional(),
  /** What the whole process tree cost, of its last attempt (docs/reports.md, "Resources"). */
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
  /** Named resources held (union of its files', sorted); present when the run set resources or exclusive. */
  locks: z.array(z.string()).optional(),
  /** It ran with no other shard running. */
  exclusive: z.boolean().optional(),
  /** Time waiting for resources with a free slot; absent when it did not wait. */
  waitedMs: z.number().nonnegative().optional(),
  /** What it waited for, e.g. "resource NAME". */
  waitedFor: z.array(z.string()).optional(),
  /** Where the per-test entries came from. */
  testSource: z.enum(["junit", "events", "junit+events", "synthetic"]),
  /** What it spent (docs/cost.md); absent when no cost was recorded. */
  cost: ShardCostSchema.optional(),
  tests: z.array(TestResultSchema),
});
export type ShardResult = z.infer<typeof ShardResultSchema>;
/** `ShardResult.resources`. */
export type ShardResources = NonNullable<ShardResult["resources"]>;

/**
 * The plan of a sliced run (docs/sharding.md): every shard in plan order with its slice;
 * `hash` is the same on every machine that planned alike (runner/plan/slice.ts).
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

/** `--shard I/N`: slice `index` of `count`. */
export const SliceSchema = z.object({
  index: z.number().int().positive(),
  count: z.number().int().positive(),
});
export type SliceRef = z.infer<typeof SliceSchema>;

/** What `shardguard merge` read: one entry per slice, in slice order. */
export const MergedFromSchema = z.object({
  slices: z.array(
    z.object({
      index: z.number().int().positive(),
      /** Null when the slice reported nothing. */
      runId: z.string().nullable(),
      /** Null: unfinished, or nothing reported. */
      exitCode: z.number().int().nullable(),
      /** Where its report.json was read; null when none was found. */
      source: z.string().nullable(),
    }),
  ),
});
export type MergedFrom = z.infer<typeof MergedFromSchema>;

/** `--last-failed`: the earlier run whose non-passing files this run reran. */
export const RerunOfSchema = z.object({
  runId: z.string(),
  startedAt: z.string(),
  /** Relative to the root, in plan order. */
  files: z.array(z.string()),
});
export type RerunOf = z.infer<typeof RerunOfSchema>;

const countsShape = <T extends readonly string[]>(keys: T) =>
  z.object(
    Object.fromEntries(keys.map((k) => [k, z.number().int().nonnegative()])) as {
      [K in T[number]]: z.ZodNumber;
    },
  );

/** Counts per shard and test status. */
export const SummarySchema = z.object({
  shards: countsShape(SHARD_STATUSES).extend({ total: z.number().int().nonnegative() }),
  tests: countsShape(TEST_STATUSES).extend({
    total: z.number().int().nonnegative(),
    flaky: z.number().int().nonnegative(),
  }),
  /** What the run spent (docs/cost.md); absent when no shard recorded a cost. */
  cost: RunCostSchema.optional(),
});
export type Summary = z.infer<typeof SummarySchema>;

/** The whole JSON report (docs/reports.md). */
export const RunReportSchema = z.object({
  schemaVersion: z.literal(REPORT_SCHEMA_VERSION),
  runId: z.string(),
  /** Every shard reached a final state and the run ended normally. */
  completed: z.boolean(),
  /** Set when the run was cancelled. */
  cancelledBy: z.enum(["SIGINT", "SIGTERM"]).nullable(),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
  durationMs: z.number().nonnegative(),
  /** Null while the run is still going. */
  exitCode: z.number().int().nullable(),
  root: z.string(),
  tool: z.object({ name: z.literal("shardguard"), version: z.string() }),
  bun: z.object({
    version: z.string(),
    path: z.string(),
    /** What this Bun lacks that shardguard would use (docs/bun-behaviour.md); absent when nothing. */
    missing: z.array(z.string()).optional(),
  }),
  settings: z.object({
    jobs: z.number().int().positive(),
    timeoutMs: z.number().int().positive(),
    graceMs: z.number().int().nonnegative(),
    /** Files per shard, or "auto" (docs/sharding.md). */
    filesPerShard: z.union([z.number().int().positive(), z.literal("auto")]),
    bunArgs: z.array(z.string()),
  }),
  summary: SummarySchema,
  /** Set when a preset planned the run. */
  preset: z
    .object({
      name: z.string(),
      /** e.g. "--preset" or "legacy command line". */
      via: z.string(),
      tier: z.string().nullable(),
      /** The diff selection's reason; null without a selection. */
      selection: z.string().nullable(),
    })
    .nullable()
    .default(null),
  /** Processes killed by the run-level sweeps (dead earlier runs at start, this run at the end). */
  sweeps: z
    .object({ staleRuns: z.array(EscapeeSchema), endOfRun: z.array(EscapeeSchema) })
    .default({ staleRuns: [], endOfRun: [] }),
  /** The whole plan when sliced (`--shard I/N`) or merged, so a merge can check its inputs share it. */
  plan: PlanManifestSchema.nullable().default(null),
  /** The slice of {@link plan} this report covers; null for a whole plan. */
  slice: SliceSchema.nullable().default(null),
  /** Set by `shardguard merge`. */
  merged: MergedFromSchema.nullable().default(null),
  /** Set by `--last-failed`. */
  rerunOf: RerunOfSchema.nullable().default(null),
  shards: z.array(ShardResultSchema),
});
export type RunReport = z.infer<typeof RunReportSchema>;

/** Copies {@link validReport} returned, so a second call skips the parse. */
const checked = new WeakSet<RunReport>();

/**
 * `RunReportSchema.parse(report)`, but a report this returned comes back as is: the writer checks once and
 * renders from the copy (bench/README.md). Reports from elsewhere are parsed each call, so edits are seen.
 * @throws ZodError when the report does not match the schema
 */
export function validReport(report: RunReport): RunReport {
  if (checked.has(report)) return report;
  const valid = RunReportSchema.parse(report);
  checked.add(valid);
  return valid;
}

/** Checks `value` against `schema`, throwing a ZodError whose issue paths start with `at`. */
function checkedPart<T>(schema: z.ZodType<T>, value: unknown, at: readonly (string | number)[]): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new z.ZodError(result.error.issues.map((issue) => ({ ...issue, path: [...at, ...issue.path] })));
}

/**
 * The report checked with every shard's `tests` empty, the tests then put back unchecked; with
 * {@link validTest} per entry it accepts exactly what RunReportSchema does, without a full copy (bench/README.md).
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
 * Test `index` of shard `shardIndex` (0-based), checked: a copy with defaults, unknown keys dropped.
 * @throws ZodError (paths from `shards`) when it does not match {@link TestResultSchema}
 */
export function validTest(test: TestResult, shardIndex: number, index: number): TestResult {
  return plainTestCopy(test) ?? checkedPart(TestResultSchema, test, ["shards", shardIndex, "tests", index]);
}

/** TestResultSchema's keys in its order (a test keeps the two equal). */
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
  "quarantined",
  "cost",
] as const;

const TEST_STATUS_SET: ReadonlySet<unknown> = new Set(TEST_STATUSES);
const isCount = (value: unknown) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/**
 * TestResultSchema.parse's copy built by hand for the common plainly-valid entry; null for anything in doubt,
 * which zod then checks (test/report-stream.test.ts compares the two; why: util/tuning.ts).
 */
function plainTestCopy(test: unknown): TestResult | null {
  if (typeof test !== "object" || test === null || Object.getPrototypeOf(test) !== Object.prototype) return null;
  const { name, file, line, status, durationMs, failure, retries, flaky, attemptFailures, synthetic, quarantined } =
    test as Record<string, unknown>;
  // A cost is rare and nested: zod copies it.
  if ((test as Record<string, unknown>).cost !== undefined) return null;
  if (typeof name !== "string" || typeof file !== "string" || !TEST_STATUS_SET.has(status)) return null;
  if (typeof durationMs !== "number" || !(durationMs >= 0 && durationMs < Infinity)) return null;
  if ((line !== undefined && !isCount(line)) || (retries !== undefined && !isCount(retries))) return null;
  const failureCopy = failure === undefined ? undefined : FailureSchema.safeParse(failure).data;
  if (failure !== undefined && failureCopy === undefined) return null;
  if (
    (flaky !== undefined && typeof flaky !== "boolean") ||
    (synthetic !== undefined && typeof synthetic !== "boolean") ||
    (quarantined !== undefined && typeof quarantined !== "boolean")
  )
    return null;
  if (attemptFailures !== undefined && !(Array.isArray(attemptFailures) && attemptFailures.length === 0)) return null;
  const copy = { name, file } as TestResult;
  // zod's copy keeps an optional key present with the value undefined.
  if ("line" in (test as object)) copy.line = line as number;
  copy.status = status as TestStatus;
  copy.durationMs = durationMs;
  if ("failure" in (test as object)) copy.failure = failureCopy;
  copy.retries = (retries as number | undefined) ?? 0;
  copy.flaky = (flaky as boolean | undefined) ?? false;
  copy.attemptFailures = [];
  copy.synthetic = (synthetic as boolean | undefined) ?? false;
  if ("quarantined" in (test as object)) copy.quarantined = quarantined as boolean;
  return copy;
}

/** Checks a test entry as part of a report: {@link validTest}'s signature. */
export type TestCheck = (test: TestResult, shardIndex: number, index: number) => TestResult;
