/**
 * Runs one planned shard end to end: spawn under supervision, collect the
 * evidence (process outcome, Bun's JUnit, inspector events), decide.
 */
import { rmSync } from "node:fs";
import { realpath } from "node:fs/promises";
import path from "node:path";
import { channelNotes, listenForTestEvents, type EventChannel } from "../events/inspector.ts";
import { socketPathFor } from "../events/socket-dir.ts";
import { journalPathFor, openJournal, type Journal } from "../events/journal.ts";
import { KEPT_ERRORS_AT_EACH_END, TestEventModel } from "../events/model.ts";
import { lostEventsNote, toEventEvidence } from "../events/evidence.ts";
import type { PlannedShard } from "../plan/plan.ts";
import { alignJUnitFiles, readBunJUnit, warmUpJUnitReading, type BunJUnitFile } from "../results/bun-junit.ts";
import { junitByteLimit, junitLimitText, JUnitTooLargeError, readJUnitCapped } from "../results/junit-shrink.ts";
import type { ShardResult } from "../results/model.ts";
import { decideShard, neverStarted, type EventEvidence } from "../results/verdict.ts";
import { unhandledErrorMessage } from "../results/bun-console.ts";
import { readFileTail } from "../util/file-tail.ts";
import { PINNED_CAPABILITIES, type BunCapabilities } from "../results/bun-capabilities.ts";
import { bails, filtersByName, inspectorEnv, passesWithNoTests, retryCount, SHARD_ENV, shardArgv } from "./command.ts";
import { MAX_DESCENDANTS, prepareStartCount, readMarks, type ListedDescendant } from "./marks.ts";
import { startProcess, type ProcessOutcome, type ShardProcess } from "./process.ts";
import { listDescendants } from "./proc-inspect.ts";
import type { HandshakeGate } from "./handshake-gate.ts";

/**
 * Events at the end-of-run barrier (about three per test) from which the
 * JUnit reader is warmed up while the child writes its JUnit
 * (results/bun-junit.ts `warmUpJUnitReading`): 60,000, a shard of ~20,000
 * tests. Smaller shards read their JUnit in a few ms, warm or not.
 */
const WARM_UP_AFTER_EVENTS = 60_000;

/**
 * The longest a finished shard's verdict waits for other shards' pending
 * handshakes, ms: 50. A child dials in 5-15 ms after its spawn on an idle
 * machine; one slower than this costs that verdict no more.
 */
const HANDSHAKE_FIRST_MS = 50;

/** Budget for the inspector handshake, ms. Past it the shard runs without events. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Paths and settings shared by every shard of a run. */
export interface ShardContext {
  runId: string;
  root: string;
  bun: string;
  bunArgs: readonly string[];
  timeoutMs: number;
  graceMs: number;
  logDir: string;
  /** Private directory for Bun's per-shard JUnit files. */
  junitDir: string;
  /** Private (0700) directory for inspector sockets; null when events are off. */
  socketDir: string | null;
  env: Record<string, string | undefined>;
  /** Per-shard environment additions (presets), merged over `env`. */
  shardEnv?: (shard: PlannedShard) => Record<string, string>;
  /** The run's pending handshakes, answered before any verdict is decided (exec/handshake-gate.ts); none: verdicts never wait. */
  handshakes?: HandshakeGate;
  /** The child preload the shards load (exec/coverage.ts); SHARD_PRELOAD when absent. */
  preload?: string;
  /** The coverage threshold Bun enforces in the shards (exec/coverage.ts `coverageThreshold`); null or absent: none. */
  coverageThreshold?: string | null;
  /** What the shards' Bun can do; default: the pinned Bun's ({@link PINNED_CAPABILITIES}). */
  capabilities?: BunCapabilities;
  /** `[test] retry` of the root's bunfig.toml, when set: Bun retries by it too. */
  bunfigRetry?: number | null;
}

/** Live view of a running shard, for progress displays. */
export interface RunningShard {
  shard: PlannedShard;
  process: ShardProcess;
  model: TestEventModel | null;
  logPath: string;
  /** Set when the event channel could not be established. */
  eventsProblem: string | null;
}

/** Hooks the caller gets while a shard runs. */
export interface ShardHooks {
  onStart?: (running: RunningShard) => void;
  onWarning?: (shard: PlannedShard, message: string) => void;
  /**
   * The child runs its tests: its event channel's handshake is complete
   * (or, without events, it was spawned). Not called for an attempt whose
   * handshake failed.
   */
  onRunning?: (running: RunningShard) => void;
}

/** A shard's result, and the planned files in which no test started. */
export interface ShardOutcome {
  result: ShardResult;
  /**
   * Planned files (relative to root) of a started shard in which the child
   * preload marked no test start: never reached (or without tests, or wedged
   * while loading). Empty when the shard never started.
   */
  filesNotStarted: string[];
}

/** Log path of a shard: `<logDir>/shard-<n>-<slug>.log`. */
export function shardLogPath(logDir: string, shard: PlannedShard): string {
  return path.join(logDir, `shard-${shard.index}-${shard.slug}.log`);
}

/**
 * Runs one shard and returns its final result, with the files in which no
 * test started. Never throws for anything the child does; a spawn failure
 * becomes a never-started result.
 *
 * @param cancelled returns the cancelling signal name once the run is cancelled
 */
export async function runShard(
  ctx: ShardContext,
  shard: PlannedShard,
  hooks: ShardHooks,
  register: (running: ShardProcess) => () => void,
  cancelled: () => string | null,
): Promise<ShardOutcome> {
  const logPath = shardLogPath(ctx.logDir, shard);
  const caps = ctx.capabilities ?? PINNED_CAPABILITIES;
  const junitPath = path.join(ctx.junitDir, `shard-${shard.index}.xml`);
  const env: Record<string, string | undefined> = {
    ...ctx.env,
    ...(ctx.shardEnv?.(shard) ?? {}),
    [SHARD_ENV.cookie]: `${ctx.runId}:${shard.index}`,
    [SHARD_ENV.inShard]: "1",
    [SHARD_ENV.runnerPid]: String(process.pid),
  };
  const cookie = `${SHARD_ENV.cookie}=${ctx.runId}:${shard.index}`;
  const running: RunningShard = { shard, process: null as unknown as ShardProcess, model: null, logPath, eventsProblem: null };
  /**
   * The child's descendants when its run ended, listed here at the
   * end-of-run barrier (events on); the preload then skips its own, slower
   * listing (runner/child/shard-preload.ts, 3.).
   */
  let listedAtEnd: ListedDescendant[] = [];

  /** One attempt; returns null when the event channel failed and the child was stopped before any test ran. */
  const marksPath = path.join(ctx.junitDir, `shard-${shard.index}.marks`);
  const attempt = async (withEvents: boolean) => {
    // Synchronous: two unlinks (usually of nothing) through the thread pool
    // cost more than the calls themselves (bench/README.md).
    rmSync(junitPath, { force: true });
    rmSync(marksPath, { force: true });
    // Four zero bytes the preload maps and counts test starts in (exec/marks.ts);
    // without them it appends "s" marks, so a failure here costs only speed.
    try {
      prepareStartCount(marksPath);
    } catch {
      // The preload falls back to appended marks.
    }
    const socketPath = withEvents && ctx.socketDir ? socketPathFor(ctx.socketDir, shard.index) : null;
    env[SHARD_ENV.marks] = marksPath;
    // With --bail Bun ends the run right after the failing test, without the
    // afterAll flush: the preload then waits once before the first test.
    env[SHARD_ENV.yieldEvents] = socketPath ? (bails(ctx.bunArgs) ? "bail" : "1") : "0";
    // Reverse connect: the runner listens there first and the child dials in (events/inspector.ts).
    Object.assign(env, inspectorEnv(socketPath));
    const argv = shardArgv({ bun: ctx.bun, root: ctx.root, files: shard.files, junitPath, bunArgs: ctx.bunArgs, noOrphans: caps.noOrphans, ...(ctx.preload ? { preload: ctx.preload } : {}) });
    // The model's clock: one reading per socket read, taken as it arrives.
    // The events of one read arrived together, so this is their arrival
    // time, with no reading per event.
    let arrivedAtMs = performance.now();
    const model = socketPath ? new TestEventModel({ root: ctx.root, now: () => arrivedAtMs, files: shard.files }) : null;
    const journal: Journal | null = socketPath ? await openJournal(journalPathFor(logPath)) : null;
    // Cancelled while we prepared: spawn nothing (the shard never started).
    if (cancelled()) {
      await journal?.close();
      return null;
    }
    // Listen before the spawn: the child dials this socket as soon as its
    // inspector is up, then holds its tests until the handshake.
    let channel: EventChannel | null = null;
    // Ended when the handshake completes or fails, or the child is gone
    // (or the attempt throws: see `attempted` below).
    let handshakeSettled: () => void = () => {};
    if (socketPath && model) {
      handshakeSettled = settleHandshake = ctx.handshakes?.enter() ?? handshakeSettled;
      try {
        channel = listenForTestEvents({
          socketPath,
          connectTimeoutMs: CONNECT_TIMEOUT_MS,
          onEvent: (event, message) => {
            model.apply(event);
            journal?.append(event, message);
          },
          sink: {
            found: (id, url, line, name, type, parentId, message) => {
              model.found(id, url, line, name, type, parentId);
              journal?.appendLine(message);
            },
            start: (id, message) => {
              model.start(id);
              journal?.appendLine(message);
            },
            end: (id, status, elapsedNs, message) => {
              model.end(id, status, elapsedNs);
              journal?.appendLine(message);
            },
          },
          onRead: () => {
            arrivedAtMs = performance.now();
          },
          onRefused: (detail) => hooks.onWarning?.(shard, detail),
          firstTestBarrier: bails(ctx.bunArgs),
          // Never throws (the channel calls it from its socket handler): a
          // /proc that cannot be read lists nothing.
          onEndOfRun: () => {
            // After the reply releasing the child is sent (a timer, not now).
            const events = channel?.stats().events ?? 0;
            if (events >= WARM_UP_AFTER_EVENTS) setTimeout(() => warmUpJUnitReading(Math.min(10_000, Math.round(events / 30))), 0);
            const pid = running.process?.pid;
            try {
              if (pid) listedAtEnd = listDescendants(pid, MAX_DESCENDANTS);
            } catch {
              listedAtEnd = [];
            }
          },
        });
      } catch (error) {
        handshakeSettled();
        running.eventsProblem = (error as Error).message;
        await journal?.close();
        return null;
      }
    }
    const proc = startProcess({ argv, cwd: ctx.root, env, logPath, timeoutMs: ctx.timeoutMs, graceMs: ctx.graceMs, cookie });
    const unregister = register(proc);
    running.process = proc;
    running.model = model;
    if (!cancelled()) hooks.onStart?.(running);

    if (channel) {
      // Only the handshake races the exit. Once the tests are released the
      // channel stays open until the child's side closes: its last frames
      // can still be unread when the exit is seen, and cutting the socket
      // then drops them (every event of a short shard, measured:
      // bench/event-loss.ts).
      let exitedFirst: () => void = () => {};
      const exited = new Promise<never>((_, reject) => {
        exitedFirst = () => reject(new Error("the child exited before the inspector handshake completed"));
      });
      void proc.done.then(() => exitedFirst());
      try {
        await Promise.race([channel.ready, exited]);
        handshakeSettled();
        if (!cancelled()) hooks.onRunning?.(running);
        exitedFirst = () => {};
      } catch (error) {
        handshakeSettled();
        running.eventsProblem = (error as Error).message;
        channel.close();
        // The child preload holds the tests until the handshake releases it,
        // so no test has run yet: stop it and run the shard again
        // without events, rather than lose the shard (docs/architecture.md, "The inspector event channel").
        proc.killNow("cancel");
        await proc.done;
        unregister();
        await journal?.close();
        return null;
      }
    } else if (!cancelled()) hooks.onRunning?.(running);
    const outcome = await proc.done;
    handshakeSettled();
    unregister();
    let notes: string[] = [];
    let unreadFrames = 0;
    let flushed = false;
    if (channel) {
      // The socket closes when the child exits; never wait on a stuck one.
      await Promise.race([channel.closed, new Promise((r) => setTimeout(r, 1_000))]);
      channel.close();
      const stats = channel.stats();
      if (stats.requestError) running.eventsProblem = `the child's inspector ${stats.requestError}`;
      notes = channelNotes(stats);
      unreadFrames = stats.oversized;
      flushed = stats.flushed;
      // Once per shard, however many messages it concerns.
      if (notes.length > 0) hooks.onWarning?.(shard, notes.join("; "));
    }
    await journal?.close();
    return { outcome, model, connected: channel !== null, notes, unreadFrames, flushed };
  };

  // An attempt that throws (a spawn that fails outright, a full disk) must not
  // leave its handshake pending: every later verdict of the run would wait for it.
  let settleHandshake: () => void = () => {};
  const attempted = (withEvents: boolean) =>
    attempt(withEvents).catch((error: unknown) => {
      settleHandshake();
      throw error;
    });
  let result = await attempted(ctx.socketDir !== null);
  if (result === null && !cancelled()) {
    hooks.onWarning?.(shard, `no per-test events (${running.eventsProblem}); running it again without them`);
    result = await attempted(false);
  }
  if (result === null) {
    const reason = `run cancelled${cancelled() ? ` (${cancelled()})` : ""} before its tests started`;
    return { result: neverStarted(shard, reason, logPath), filesNotStarted: [] };
  }
  const { outcome, connected, notes, unreadFrames, flushed } = result;
  // Said even when the shard passes: its report has none of what only events carry.
  if (running.eventsProblem) notes.push(`no inspector events (${running.eventsProblem}): retries, flakiness and the test in flight are unknown`);
  let model = result.model;
  result = null;

  // Other shards' children waiting for their handshake go first: deciding
  // this verdict (its slot is already free) would hold them (exec/handshake-gate.ts).
  await ctx.handshakes?.settled(HANDSHAKE_FIRST_MS);
  // The preload's global afterAll writes "e": Bun reached the end of the run.
  const marks = await readMarks(marksPath);

  let junit: BunJUnitFile[] | null = null;
  let junitProblem: string | undefined;
  let junitOverLimit = false;
  // Streamed with long texts cut: the file is test-controlled and may be
  // huge. Its limit grows with the tests that started (a passing file of
  // 100,000 tests writes about 19 MB).
  const junitLimit = junitByteLimit(marks.testsStarted, model?.failedEnds() ?? 0);
  try {
    junit = alignJUnitFiles(readBunJUnit(await readJUnitCapped(junitPath, junitLimit)), shard.files, ctx.root);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    junitOverLimit = error instanceof JUnitTooLargeError;
    junitProblem =
      code === "ENOENT"
        ? "Bun wrote no JUnit report"
        : junitOverLimit
          ? `failed to read Bun's JUnit report: ${(error as Error).message}, past the read limit (${junitLimitText(junitLimit)})`
          : `Bun's JUnit report is unreadable: ${(error as Error).message}`;
  }

  const { testsStarted, finishedNormally, descendants } = marks;
  const consoleError = junit === null && outcome.exitCode === 1 ? await unhandledErrorText(logPath) : undefined;
  // Tests defined through helper modules: map them to their files by the preload's file records.
  model?.applyFileStarts(marks.filesStarted);
  const events: EventEvidence | null = model ? toEventEvidence(model, connected, undefined, unreadFrames) : null;
  const lost = events ? lostEventsNote(events, testsStarted, flushed, finishedNormally) : null;
  if (lost !== null) notes.push(lost);
  const leftOut = model?.errorsLeftOut() ?? 0;
  if (leftOut > 0) notes.push(`${leftOut} error events left out of the failure texts (the first and last ${KEPT_ERRORS_AT_EACH_END} of each test attempt are kept, with a count); the full text is in the shard log`);
  // The model's records are no longer needed: let the collector have them
  // before the decision builds the result entries (bench/README.md, P8).
  model = null;
  running.model = null;
  const cancelSignal = cancelled();
  const decided = decideShard({
    index: shard.index,
    slug: shard.slug,
    files: shard.files,
    process: {
      started: outcome.spawnError === null,
      ...(outcome.spawnError !== null ? { notStartedReason: `could not start: ${outcome.spawnError}` } : {}),
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      killedBy: outcome.killedBy,
      escalated: outcome.escalated,
      durationMs: outcome.durationMs,
      startedAt: outcome.spawnError === null ? outcome.startedAt.toISOString() : null,
      ...(cancelSignal ? { cancelSignal } : {}),
    },
    junit,
    ...(junitProblem ? { junitProblem } : {}),
    ...(junitOverLimit ? { junitOverLimit } : {}),
    events,
    passWithNoTests: passesWithNoTests(ctx.bunArgs),
    nameFilter: filtersByName(ctx.bunArgs),
    bail: bails(ctx.bunArgs),
    ...(caps.junitListsAttempts ? { junitAttempts: { maxAttempts: attemptsPerTest(ctx) } } : {}),
    testsStarted,
    finishedNormally,
    ...(ctx.coverageThreshold ? { coverageThreshold: ctx.coverageThreshold } : {}),
    ...(consoleError ? { consoleError } : {}),
    notes,
    timeoutMs: ctx.timeoutMs,
    graceMs: ctx.graceMs,
    logPath: outcome.spawnError === null ? logPath : null,
    logIncomplete: outcome.logError !== null,
  });
  decided.leftovers = leftoversOf(outcome, [...descendants, ...listedAtEnd]);
  if (outcome.resources) decided.resources = outcome.resources;
  if (running.eventsProblem && decided.status !== "passed") {
    decided.reason += `; per-test data missing (${running.eventsProblem})`;
  }
  const filesNotStarted = outcome.spawnError === null ? await unmarkedFiles(ctx.root, shard.files, marks.filesStarted) : [];
  return { result: decided, filesNotStarted };
}

/**
 * Planned files whose absolute or real path is not among the marked ones
 * (Bun reports a file by its real path when the root is reached through a symlink).
 */
async function unmarkedFiles(root: string, files: readonly string[], marked: readonly string[]): Promise<string[]> {
  const seen = new Set(marked);
  const out: string[] = [];
  for (const file of files) {
    const abs = path.resolve(root, file);
    if (seen.has(abs)) continue;
    const real = await realpath(abs).catch(() => abs);
    if (!seen.has(real)) out.push(file);
  }
  return out;
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
    leftovers.push({ pid: d.pid, command: d.command, leftGroup: d.pgid !== null && outcome.pid !== null && d.pgid !== outcome.pid });
  }
  return leftovers;
}

/** The message of a load failure from the last 64 KiB of a shard's log (results/bun-console.ts). */
async function unhandledErrorText(logPath: string): Promise<string | undefined> {
  return unhandledErrorMessage((await readFileTail(logPath, 64 * 1024)).text);
}

/** Attempts a retried test gets (retry count + 1, flags over bunfig.toml, as in Bun), or null when no retry count is known. */
function attemptsPerTest(ctx: ShardContext): number | null {
  const retry = retryCount(ctx.bunArgs) ?? ctx.bunfigRetry ?? null;
  return retry === null ? null : retry + 1;
}
