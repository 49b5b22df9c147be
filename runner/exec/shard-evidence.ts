/** A shard's evidence once its last attempt is over, and the pure step from it to its {@link ShardResult}. */
import type { ShardSpend } from "../cost/ledger.ts";
import { closeSync } from "node:fs";
import type { EvalSpend } from "../cost/gstack-eval.ts";
import { realpath } from "node:fs/promises";
import path from "node:path";
import { KEPT_ERRORS_AT_EACH_END } from "../events/test-model.ts";
import { lostEventsNote } from "../events/event-evidence.ts";
import type { PlannedShard } from "../plan/plan.ts";
import { alignJUnitFiles, readBunJUnitFile, type BunJUnitFile } from "../results/bun-junit.ts";
import { unhandledErrorMessage } from "../results/bun-console.ts";
import { junitByteLimit, junitLimitText, JUnitTooLargeError } from "../results/junit-shrink.ts";
import type { ShardResult } from "../results/report-model.ts";
import { decideShard, oomSentence, type EventEvidence } from "../results/verdict.ts";
import { readFileTail } from "../util/file-tail.ts";
import type { ListedDescendant, ShardMarks } from "./marks.ts";
import type { ProcessOutcome } from "./process.ts";

/** What one attempt whose child ran saw, from its spawn to its channel's close. */
export interface AttemptRecord {
  outcome: ProcessOutcome;
  marks: ShardMarks;
  /** The inspector events reduced for the verdict; null when the attempt ran without them. */
  events: EventEvidence | null;
  /** Test attempts the events saw fail: the JUnit read limit grows with them. */
  failedEnds: number;
  /** Error events left out of the failure texts. */
  errorsLeftOut: number;
  /** The channel's own notes, already said as one warning. */
  channelNotes: string[];
  flushed: boolean;
  /** A request the child's inspector failed (its events are then incomplete); null when none. */
  requestProblem: string | null;
  /** The child's descendants listed at the end-of-run barrier; empty when it was not reached. */
  listedAtEnd: ListedDescendant[];
  /** The marks file was deleted while the child ran, and read through the runner's descriptor. */
  marksDeleted?: boolean;
  /**
   * A descriptor of Bun's JUnit opened as the child's group was gone (null: there was none), read through
   * /proc/self/fd on Linux so a test deleting the output directory meanwhile loses nothing; the reader closes it.
   */
  junitFd?: number | null;
  /** What its cost file recorded (docs/cost.md); null when the attempt had none. */
  cost?: ShardSpend | null;
  /** What the preset's cost adapter read of its eval directory (docs/cost.md, "Adapters"); null without one. */
  evalCost?: EvalSpend | null;
}

/** Bun's JUnit as read for a verdict. */
export interface JUnitReading {
  /** Null when there was none, or it could not be read. */
  files: BunJUnitFile[] | null;
  problem?: string;
  overLimit?: boolean;
}

/** Reads a shard's JUnit streamed, long texts cut (test-controlled); its limit grows with starts. Never throws. */
export async function readShardJUnit(
  junitPath: string,
  shard: PlannedShard,
  root: string,
  record: AttemptRecord,
): Promise<JUnitReading> {
  const limit = junitByteLimit(record.marks.testsStarted, record.failedEnds);
  const fd = record.junitFd ?? null;
  const source = fd !== null && process.platform === "linux" ? `/proc/self/fd/${fd}` : junitPath;
  try {
    return {
      files: alignJUnitFiles(await readBunJUnitFile(source, limit, record.events?.tests), shard.files, root),
    };
  } catch (error) {
    const message = (error as Error).message;
    const code = (error as NodeJS.ErrnoException).code;
    // Its directory gone under a deleted output directory: nowhere to write it.
    if (record.marksDeleted && (code === "ENOENT" || code === "ENOTDIR")) {
      return { files: null, problem: `Bun wrote no JUnit report: ${DELETED_DIR}` };
    }
    if (code === "ENOENT") return { files: null, problem: "Bun wrote no JUnit report" };
    if (error instanceof JUnitTooLargeError) {
      return {
        files: null,
        overLimit: true,
        problem: `failed to read Bun's JUnit report: ${message}, past the read limit (${junitLimitText(limit)})`,
      };
    }
    return { files: null, problem: `Bun's JUnit report is unreadable: ${message.replaceAll(source, junitPath)}` };
  } finally {
    if (fd !== null) closeFd(fd);
  }
}

/** Closes a held descriptor; one already closed is no error of the verdict's. */
function closeFd(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Nothing to release.
  }
}

/** Why a shard's files under OUT went missing while it ran, as reasons and notes say it. */
const DELETED_DIR =
  "the run's directory under the output directory was deleted while the shard ran (a test removed it?)";

/** A load failure's message from the tail of a shard's log, read only when Bun wrote no JUnit and exited 1. */
export async function consoleErrorOf(
  logPath: string,
  record: AttemptRecord,
  junit: JUnitReading,
): Promise<string | undefined> {
  if (junit.files !== null || record.outcome.exitCode !== 1) return undefined;
  return unhandledErrorMessage((await readFileTail(logPath, 64 * 1024)).text);
}

/** Planned files with a start mark, by absolute or real path (Bun reports real paths under a symlinked root). */
export async function filesMarkedStarted(root: string, files: readonly string[], record: AttemptRecord) {
  const seen = new Set(record.marks.filesStarted);
  const out: string[] = [];
  if (seen.size === 0) return out;
  for (const file of files) {
    const abs = path.resolve(root, file);
    if (seen.has(abs) || seen.has(await realpath(abs).catch(() => abs))) out.push(file);
  }
  return out;
}

/** Planned files without a start mark, but for the `--isolate` files that had begun to load (the last, in flight). */
export function filesNotStarted(files: readonly string[], record: AttemptRecord, marked: readonly string[]): string[] {
  if (record.outcome.spawnError !== null) return [];
  const seen = new Set(marked);
  // The file loading when an --isolate batch ended keeps the shard's verdict: running it again would
  // spend another timeout on the same hang. With events, the files before it are known too.
  const begun = Math.min(record.marks.filesLoaded, files.length);
  const known = record.events?.connected === true && record.events.tests.length > 0 ? begun : 0;
  return files.filter((file, at) => !(at < known || (begun > 0 && at === begun - 1)) && !seen.has(file));
}

/** The run's settings a verdict reads. Times in ms. */
export interface VerdictSettings {
  timeoutMs: number;
  graceMs: number;
  passWithNoTests: boolean;
  /** How a file that registers no tests is judged (the `empty-files` setting). */
  emptyFiles: "pass" | "fail";
  nameFilter: boolean;
  bail: boolean;
  /** Set when this Bun's JUnit lists every attempt of a retried test (results/verdict-evidence.ts). */
  junitAttempts?: { maxAttempts: number | null };
  coverageThreshold?: string;
}

/** Everything a shard's verdict is decided from. */
export interface ShardSeen {
  shard: PlannedShard;
  record: AttemptRecord;
  junit: JUnitReading;
  consoleError?: string;
  filesStarted: readonly string[];
  /** Why the shard has no (or incomplete) per-test events; null when it has them, or events were off. */
  eventsProblem: string | null;
  cancelSignal: string | null;
  logPath: string;
  settings: VerdictSettings;
}

/** The shard's result from what was seen: results/verdict.ts's verdict plus notes and leftovers. Pure. */
export function decideShardResult(seen: ShardSeen): ShardResult {
  const { shard, record, junit, settings } = seen;
  const { outcome, marks } = record;
  const started = outcome.spawnError === null;
  const decided = decideShard({
    index: shard.index,
    slug: shard.slug,
    files: shard.files,
    process: {
      started,
      ...(started ? {} : { notStartedReason: `could not start: ${outcome.spawnError}` }),
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      killedBy: outcome.killedBy,
      escalated: outcome.escalated,
      ...(outcome.stoppedAtSigterm ? { stoppedAtSigterm: true } : {}),
      ...(outcome.oomKills ? { oomKills: outcome.oomKills } : {}),
      durationMs: outcome.durationMs,
      startedAt: started ? outcome.startedAt.toISOString() : null,
      ...(seen.cancelSignal ? { cancelSignal: seen.cancelSignal } : {}),
    },
    junit: junit.files,
    ...(junit.problem ? { junitProblem: junit.problem } : {}),
    ...(junit.overLimit ? { junitOverLimit: true } : {}),
    events: record.events,
    passWithNoTests: settings.passWithNoTests,
    emptyFiles: settings.emptyFiles,
    nameFilter: settings.nameFilter,
    bail: settings.bail,
    ...(settings.junitAttempts ? { junitAttempts: settings.junitAttempts } : {}),
    testsStarted: marks.testsStarted,
    filesStarted: [...seen.filesStarted],
    ...(marks.filesLoaded > 0 ? { filesLoaded: marks.filesLoaded } : {}),
    finishedNormally: marks.finishedNormally,
    ...(record.marksDeleted ? { marksDeleted: true } : {}),
    ...(settings.coverageThreshold ? { coverageThreshold: settings.coverageThreshold } : {}),
    ...(seen.consoleError ? { consoleError: seen.consoleError } : {}),
    notes: shardNotes(seen),
    timeoutMs: settings.timeoutMs,
    graceMs: settings.graceMs,
    logPath: started ? seen.logPath : null,
    logIncomplete: outcome.logError !== null,
  });
  decided.leftovers = leftoversOf(outcome, [...marks.descendants, ...record.listedAtEnd]);
  if (outcome.resources) decided.resources = outcome.resources;
  if (seen.eventsProblem && decided.status !== "passed")
    decided.reason += `; per-test data missing (${seen.eventsProblem})`;
  return decided;
}

/** The shard's notes, in the order they were learnt. */
function shardNotes({ record, eventsProblem }: ShardSeen): string[] {
  const notes = [...record.channelNotes];
  const fromMemory = record.events ? ", its events from memory" : "";
  const read = `its marks were read through the runner's open descriptors${fromMemory}`;
  if (record.marksDeleted) notes.push(`${DELETED_DIR}: ${read}`);
  if (record.outcome.logNote) notes.push(record.outcome.logNote);
  // Said even when the shard passes: its report has none of what only events carry.
  if (eventsProblem)
    notes.push(`no inspector events (${eventsProblem}): retries, flakiness and the test in flight are unknown`);
  // An --isolate batch ends with a short sleep, never the end-of-run barrier.
  const barrier = record.marks.filesLoaded === 0;
  const lost = record.events
    ? lostEventsNote(
        record.events,
        record.marks.testsStarted,
        record.flushed || !barrier,
        record.marks.finishedNormally,
      )
    : null;
  if (lost !== null) notes.push(lost);
  if (record.outcome.oomKills) notes.push(`${oomSentence(record.outcome.oomKills)} (memory cgroup oom_kill)`);
  if (record.errorsLeftOut > 0) {
    notes.push(
      `${record.errorsLeftOut} error events left out of the failure texts (the first and last ` +
        `${KEPT_ERRORS_AT_EACH_END} of each test attempt are kept, with a count); the full text is in the shard log`,
    );
  }
  return notes;
}

/**
 * What the sweep killed plus what was alive when the run ended: `--no-orphans` kills the latter before
 * any sweep can look, so a leak inside the group would go unreported. One entry per pid; the sweep's wins.
 */
function leftoversOf(outcome: ProcessOutcome, listed: readonly ListedDescendant[]): ShardResult["leftovers"] {
  const leftovers = outcome.leftovers.map(({ pid, command, leftGroup }) => ({ pid, command, leftGroup }));
  const seen = new Set(leftovers.map((e) => e.pid));
  for (const d of listed) {
    if (seen.has(d.pid)) continue;
    seen.add(d.pid);
    leftovers.push({
      pid: d.pid,
      command: d.command,
      leftGroup: d.pgid !== null && outcome.pid !== null && d.pgid !== outcome.pid,
    });
  }
  return leftovers;
}
