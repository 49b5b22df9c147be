/**
 * CTRF report writer (ctrf.io): only fields the CTRF schema defines, everything else of ours under `extra`; the
 * status mapping is docs/reports.md, "CTRF". test/report-ctrf.test.ts checks it against the `ctrf` package's schema.
 */
import {
  validReport,
  validReportShell,
  validTest,
  type RunReport,
  type ShardResult,
  type TestCheck,
  type TestResult,
  type TestStatus,
} from "../results/report-model.ts";
import { entryChars, failureNote, reportText } from "./json.ts";
import { JsonBatch, jsonWithStreamedArray } from "./json-stream.ts";

/** The CTRF spec version: the `ctrf` reference implementation's `CURRENT_SPEC_VERSION` (a test keeps them equal). */
export const CTRF_SPEC_VERSION = "0.0.0";

/** The five test statuses CTRF allows. */
export type CtrfStatus = "passed" | "failed" | "skipped" | "pending" | "other";

/** Our test status → CTRF status (docs/reports.md, "CTRF"); the original travels along as `rawStatus`. */
export const CTRF_STATUS: Readonly<Record<TestStatus, CtrfStatus>> = {
  passed: "passed",
  failed: "failed",
  skipped: "skipped",
  todo: "pending",
  "skipped-by-diff": "skipped",
  "timed-out": "failed",
  crashed: "failed",
  "never-started": "other",
};

/** One CTRF test entry as shardguard writes it (a subset of CTRF's test object). */
export interface CtrfTest {
  name: string;
  status: CtrfStatus;
  /** Our test status, unmapped. */
  rawStatus: TestStatus;
  /** Final attempt, whole milliseconds. */
  duration: number;
  /** `[file]`: CTRF's suite hierarchy, one suite per test file as in the JUnit report. */
  suite: [string];
  filePath: string;
  line?: number;
  message?: string;
  trace?: string;
  retries: number;
  flaky: boolean;
  /** Failed attempts before the final one; absent when there were none. */
  retryAttempts?: { attempt: number; status: "failed"; message: string; extra: { type: string } }[];
  extra: {
    /** 1-based index of the shard that ran (or would have run) the test. */
    shard: number;
    /** True for a "(whole file)" stand-in without per-test data. */
    synthetic: boolean;
    /** The failure's `errorName` where Bun gave one, else its `type` (as in JUnit); absent without a failure. */
    failureType?: string;
    /** Quarantined (docs/history.md): its failure does not fail the run; absent otherwise. */
    quarantined?: true;
    /** What it spent, as in report.json (docs/cost.md); absent when nothing was charged to it. */
    cost?: TestResult["cost"];
  };
}

/** A CTRF document as shardguard writes it. */
export interface CtrfReport {
  reportFormat: "CTRF";
  specVersion: string;
  /** When this snapshot was taken: `stop` as ISO 8601 UTC. */
  timestamp: string;
  generatedBy: "shardguard";
  results: {
    tool: { name: "shardguard"; version: string };
    summary: {
      tests: number;
      passed: number;
      failed: number;
      skipped: number;
      pending: number;
      other: number;
      flaky: number;
      /** Number of test files (CTRF suites). */
      suites: number;
      /** Run start, ms since the Unix epoch. */
      start: number;
      /** Run end (interim reports: the time of the snapshot), ms since the Unix epoch. */
      stop: number;
      /** Run time so far, whole ms. */
      duration: number;
    };
    tests: CtrfTest[];
    extra: {
      runId: string;
      completed: boolean;
      cancelledBy: RunReport["cancelledBy"];
      exitCode: number | null;
      /** Per shard; `resources` as in report.json (CPU ms, peak RSS bytes, method), absent when not measured. */
      shards: {
        index: number;
        status: ShardResult["status"];
        reason: string;
        logPath: string | null;
        notes?: string[];
        resources?: ShardResult["resources"];
        cost?: ShardResult["cost"];
      }[];
      /** `summary.cost` of report.json (docs/cost.md). */
      cost?: RunReport["summary"]["cost"];
      /** `--shard I/N`: which slice of the plan this report covers. */
      slice?: { index: number; count: number };
      /** Hash of the sliced plan (sliced and merged reports). */
      planHash?: string;
      /** Run ids of the slices a merged report was made of (null: the slice reported nothing). */
      mergedFrom?: { slice: number; runId: string | null }[];
      /** `--last-failed`: the run whose non-passing files this run reran. */
      rerunOf?: string;
    };
  };
}

/** The CTRF document of `report`: one entry per test entry, in plan order; failure texts cleaned and capped as in
 * report.json. Pure. @throws ZodError when the report does not match {@link RunReportSchema} */
export function buildCtrf(report: RunReport): CtrfReport {
  const valid = validReport(report); // RunReportSchema.parse, unless already checked
  const tests = valid.shards.flatMap((shard) =>
    shard.tests.map((test) => ctrfTest(test, shard.index, failureNote(shard.logPath))),
  );
  return ctrfDocument(valid, tests);
}

/** The document around `tests`, its summary counted from `valid`'s entries (so the streamed writer counts the same). */
function ctrfDocument(valid: RunReport, tests: CtrfTest[]): CtrfReport {
  const start = Date.parse(valid.startedAt);
  const duration = Math.round(valid.durationMs);
  const stop = valid.finishedAt !== null ? Date.parse(valid.finishedAt) : start + duration;
  const counts = { tests: 0, passed: 0, failed: 0, skipped: 0, pending: 0, other: 0, flaky: 0 };
  const files = new Set<string>();
  for (const shard of valid.shards) {
    for (const test of shard.tests) {
      counts.tests += 1;
      counts[CTRF_STATUS[test.status]] += 1;
      // Unchecked entries (the streamed path checks each one later): flaky may still be missing (default false).
      if (test.flaky === true) counts.flaky += 1;
      files.add(test.file);
    }
  }
  return {
    reportFormat: "CTRF",
    specVersion: CTRF_SPEC_VERSION,
    timestamp: new Date(stop).toISOString(),
    generatedBy: "shardguard",
    results: {
      tool: { name: "shardguard", version: valid.tool.version },
      summary: { ...counts, suites: files.size, start, stop, duration },
      tests,
      extra: {
        runId: valid.runId,
        completed: valid.completed,
        cancelledBy: valid.cancelledBy,
        exitCode: valid.exitCode,
        ...(valid.summary.cost ? { cost: valid.summary.cost } : {}),
        shards: valid.shards.map((s) => ({
          index: s.index,
          status: s.status,
          reason: s.reason,
          logPath: s.logPath,
          ...(s.notes ? { notes: s.notes } : {}),
          ...(s.resources ? { resources: s.resources } : {}),
          ...(s.cost ? { cost: s.cost } : {}),
        })),
        ...(valid.slice ? { slice: { index: valid.slice.index, count: valid.slice.count } } : {}),
        ...(valid.plan ? { planHash: valid.plan.hash } : {}),
        ...(valid.merged ? { mergedFrom: valid.merged.slices.map((s) => ({ slice: s.index, runId: s.runId })) } : {}),
        ...(valid.rerunOf ? { rerunOf: valid.rerunOf.runId } : {}),
      },
    },
  };
}

/** {@link buildCtrf} as the text of `ctrf.json` ({@link ctrfChunks} joined). @throws ZodError as buildCtrf does */
export function renderCtrf(report: RunReport): string {
  return [...ctrfChunks(report)].join("");
}

/** {@link renderCtrf} in pieces, checked part by part as json.ts's jsonChunks is (`check`: shared when JSON renders
 * beside it). @throws ZodError on the pull that reaches a bad part */
export function* ctrfChunks(report: RunReport, check: TestCheck = validTest): Generator<string, void, undefined> {
  const valid = validReportShell(report);
  const tests = function* () {
    // Entries of consecutive shards share a batch: they are consecutive items of one array.
    const batch = new JsonBatch(3);
    for (let s = 0; s < valid.shards.length; s++) {
      const shard = valid.shards[s]!;
      const note = failureNote(shard.logPath);
      for (let t = 0; t < shard.tests.length; t++) {
        const test = check(shard.tests[t]!, s, t);
        const full = batch.add(ctrfTest(test, shard.index, note), entryChars(test));
        if (full !== null) yield full;
      }
    }
    const rest = batch.take();
    if (rest !== null) yield rest;
  };
  yield* jsonWithStreamedArray(ctrfDocument(valid, []), ["results", "tests"], 0, tests());
  yield "\n";
}

function ctrfTest(test: TestResult, shard: number, note: string): CtrfTest {
  const failure = test.failure;
  // Keys added in the order of the document (JSON keeps insertion order); optional ones only when present.
  const out: CtrfTest = {
    // CTRF requires a non-empty name; Bun accepts test("").
    name: test.name === "" ? "(unnamed test)" : test.name,
    status: CTRF_STATUS[test.status],
    rawStatus: test.status,
    duration: Math.round(test.durationMs),
    suite: [test.file],
    filePath: test.file,
  } as CtrfTest;
  if (test.line !== undefined) out.line = test.line;
  if (failure !== undefined) out.message = reportText(failure.message, note);
  if (failure?.details !== undefined) out.trace = reportText(failure.details, note);
  out.retries = test.retries;
  out.flaky = test.flaky;
  // Bun retries only after a failure, so the recorded failures are attempts 1..n.
  if (test.attemptFailures.length > 0) {
    out.retryAttempts = test.attemptFailures.map((a, i) => ({
      attempt: i + 1,
      status: "failed" as const,
      message: reportText(a.message, note),
      extra: { type: a.errorName ?? a.type },
    }));
  }
  out.extra =
    failure !== undefined
      ? { shard, synthetic: test.synthetic, failureType: failure.errorName ?? failure.type }
      : { shard, synthetic: test.synthetic };
  if (test.quarantined) out.extra.quarantined = true;
  if (test.cost) out.extra.cost = test.cost;
  return out;
}
