/**
 * A shard's evidence once its last attempt is over: what the attempt saw
 * (exec/shard-attempt.ts, an {@link AttemptRecord}), what is left on disk
 * (Bun's JUnit, the log's tail, the files marked started), and the pure
 * step from all of it to the decided {@link ShardResult}
 * ({@link decideShardResult}, through results/verdict.ts `decideShard`).
 */
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
  /** The child preload's marks, read once the group was gone. */
  marks: ShardMarks;
  /** The inspector events reduced for the verdict (events/event-evidence.ts); null when the attempt ran without them. */
  events: EventEvidence | null;
  /** Test attempts the events saw fail: the JUnit read limit grows with them. */
  failedEnds: number;
  /** Error events left out of the failure texts (events/test-model.ts keeps the first and last of each attempt). */
  errorsLeftOut: number;
  /** The channel's own notes (events/channel.ts `channelNotes`), already said as one warning. */
  channelNotes: string[];
  /** The end-of-run barrier's reply arrived (ChannelStats.flushed). */
  flushed: boolean;
  /** A request the child's inspector failed (its events are then incomplete); null when none. */
  requestProblem: string | null;
  /** The child's descendants listed at the end-of-run barrier; empty when it was not reached. */
  listedAtEnd: ListedDescendant[];
  /**
   * The marks file was deleted while the child ran (a test removed the
   * output directory); it was read through the runner's descriptor.
   */
  marksDeleted?: boolean;
}

/** Bun's JUnit as read for a verdict. */
export interface JUnitReading {
  /** Null when there was none, or it could not be read. */
  files: BunJUnitFile[] | null;
  /** Why `files` is null. */
  problem?: string;
  /** It was there but past its read limit. */
  overLimit?: boolean;
}

/**
 * Reads Bun's JUnit of a shard, streamed with long texts cut (the file is
 * test-controlled and may be huge). Its limit grows with the tests that
 * started: a passing file of 100,000 tests writes about 19 MB. Never throws.
 */
export async function readShardJUnit(
  junitPath: string,
  shard: PlannedShard,
  root: string,
  record: AttemptRecord,
): Promise<JUnitReading> {
  const limit = junitByteLimit(record.marks.testsStarted, record.failedEnds);
  try {
    return {
      files: alignJUnitFiles(await readBunJUnitFile(junitPath, limit, record.events?.tests), shard.files, root),
    };
  } catch (error) {
    const message = (error as Error).message;
    const code = (error as NodeJS.ErrnoException).code;
    // Its directory gone (or a file in its place) under a deleted output directory: nowhere to write it.
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
    return { files: null, problem: `Bun's JUnit report is unreadable: ${message}` };
  }
}

/** Why a shard's files under OUT went missing while it ran, as reasons and notes say it. */
const DELETED_DIR =
  "the run's directory under the output directory was deleted while the shard ran (a test removed it?)";

/**
 * The message of a load failure from the last 64 KiB of a shard's log
 * (results/bun-console.ts), read only when Bun wrote no JUnit and exited 1.
 */
export async function consoleErrorOf(
  logPath: string,
  record: AttemptRecord,
  junit: JUnitReading,
): Promise<string | undefined> {
  if (junit.files !== null || record.outcome.exitCode !== 1) return undefined;
  return unhandledErrorMessage((await readFileTail(logPath, 64 * 1024)).text);
}

/**
 * Planned files (relative to root) in which the child preload marked a test
 * start, by absolute or real path (Bun reports a file by its real path when
 * the root is reached through a symlink), in plan order.
 */
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

/**
 * Planned files without a start mark (`marked`: {@link filesMarkedStarted}),
 * but for the files of an `--isolate` batch that had begun to load when the
 * child ended: the last of them (it was in flight), and with events the ones
 * before it. Empty when the child never spawned.
 */
export function filesNotStarted(files: readonly string[], record: AttemptRecord, marked: readonly string[]): string[] {
  if (record.outcome.spawnError !== null) return [];
  const seen = new Set(marked);
  // In an --isolate batch ("l" marks) the file loading when the child ended, the last begun,
  // keeps the shard's verdict: running it again would spend another timeout on the same hang.
  // With events, the files before it had ended and their entries are known (results/verdict.ts).
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
  /** Planned files with a start mark ({@link filesMarkedStarted}). */
  filesStarted: readonly string[];
  /** Why the shard has no (or incomplete) per-test events; null when it has them, or events were off. */
  eventsProblem: string | null;
  /** The signal that cancelled the run; null when it was not cancelled. */
  cancelSignal: string | null;
  logPath: string;
  settings: VerdictSettings;
}

/**
 * The shard's result from what was seen: the verdict of results/verdict.ts,
 * its notes (the channel's, missing or lost events, error events left out),
 * the leftovers, and the missing per-test data named in a reason that is
 * not a pass. Pure.
 */
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

/** The shard's notes (ShardResult.notes), in the order they were learnt. */
function shardNotes({ record, eventsProblem }: ShardSeen): string[] {
  const notes = [...record.channelNotes];
  const fromMemory = record.events ? ", its events from memory" : "";
  const read = `its marks were read through the runner's open descriptors${fromMemory}`;
  if (record.marksDeleted) notes.push(`${DELETED_DIR}: ${read}`);
  if (record.outcome.logNote) notes.push(record.outcome.logNote);
  // Said even when the shard passes: its report has none of what only events carry.
  if (eventsProblem)
    notes.push(`no inspector events (${eventsProblem}): retries, flakiness and the test in flight are unknown`);
  // An --isolate batch (its "l" marks) ends with a short sleep, never the end-of-run barrier (child/shard-preload.ts, 4.).
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
      `${record.errorsLeftOut} error events left out of the failure texts (the first and last ${KEPT_ERRORS_AT_EACH_END} of each test attempt are kept, with a count); the full text is in the shard log`,
    );
  }
  return notes;
}

/**
 * The shard's leftovers: what the cookie sweep killed, plus what was alive
 * when the run ended (listed by the runner at the end-of-run barrier, or by
 * the child preload). Bun's `--no-orphans` kills the latter as the child
 * exits (and the group SIGKILL after it), before any sweep can look, so
 * without that list a process leaked inside the group would go unreported.
 * One entry per pid; the sweep's wins.
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
