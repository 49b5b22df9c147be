/** An attempt at a shard: files reset to its {@link AttemptRecord} (docs/architecture.md, "One shard end to end"). */
import { closeSync, rmSync } from "node:fs";
import { toEventEvidence } from "../events/event-evidence.ts";
import { channelNotes, listenForTestEvents, type EventChannel } from "../events/inspector.ts";
import { journalPathFor, openJournal, type Journal } from "../events/journal.ts";
import { TestEventModel } from "../events/test-model.ts";
import { socketPathFor } from "../events/socket-dir.ts";
import type { PlannedShard } from "../plan/plan.ts";
import { PINNED_CAPABILITIES } from "../results/bun-capabilities.ts";
import { cleanEventName } from "../results/text.ts";
import { bails, inspectorEnv, SHARD_ENV, shardArgv } from "./bun-command.ts";
import { acknowledgeEndOfRun, marksDeleted, MAX_DESCENDANTS, prepareMarks, readMarks, releaseMarks } from "./marks.ts";
import type { HeldMarks, ListedDescendant } from "./marks.ts";
import { StartAcks } from "./start-acks.ts";
import { listDescendants } from "./proc-inspect.ts";
import { startProcess, type ProcessOutcome, type ProcessState, type ShardProcess } from "./process.ts";
import { VERDICT_WAIT_MS } from "./handshake-gate.ts";
import type { RunningShard, ShardContext, ShardHooks, ShardPaths } from "./shard-context.ts";
import type { AttemptRecord } from "./shard-evidence.ts";
import { CostFile } from "./cost-file.ts";
import { EvalDirReader } from "./eval-dir.ts";
import { COST_FILE_ENV } from "../cost/record.ts";
import { openRegularSync } from "../util/regular-file.ts";

/** A descriptor of the shard's JUnit as the child left it, for the verdict to read and close; null when none. */
function holdJUnit(junitPath: string): number | null {
  try {
    return openRegularSync(junitPath);
  } catch {
    // Missing or not a file: the verdict reads the path and says which.
    return null;
  }
}

/** The attempt could not be prepared (run directories not made again): the shard never started. */
export class ShardNotStartedError extends Error {}

/** Budget for the inspector handshake, ms. Past it the shard runs without events. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** File times lag the wall clock by up to a kernel tick: an eval file this much older than the spawn still counts. */
const MTIME_SLACK_MS = 100;

/** The longest wait for the child's side of the channel to close once its group is gone, ms. */
const CHANNEL_CLOSE_WAIT_MS = 1_000;

/** What a {@link ShardAttempt} needs. */
export interface AttemptOptions {
  ctx: ShardContext;
  shard: PlannedShard;
  paths: ShardPaths;
  withEvents: boolean;
  hooks: ShardHooks;
  /** The cancelling signal's name once the run is cancelled, else null. */
  cancelled: () => string | null;
}

/** The child ran (its record is evidence), or it stopped before any test, with why the channel failed. */
export type AttemptEnd = { kind: "ran"; record: AttemptRecord } | { kind: "stopped"; problem: string | null };

/** Where an attempt is; it moves forward only and may skip (docs/architecture.md, "One shard end to end"). */
export type AttemptState =
  | "preparing"
  | "channel-open"
  | "spawned"
  | "tests-running"
  | "child-exited"
  | "group-gone"
  | "evidence-collected"
  | "stopped";

const STATE_ORDER: readonly AttemptState[] = [
  "preparing",
  "channel-open",
  "spawned",
  "tests-running",
  "child-exited",
  "group-gone",
  "evidence-collected",
  "stopped",
];

/** What an attempt with events holds while its channel is open: nothing of it outlives the record. */
interface AttemptEvents {
  model: TestEventModel;
  journal: Journal;
  channel: EventChannel | null;
}

/** What the record takes from the event channel once it is closed. */
interface ChannelSummary {
  channelNotes: string[];
  flushed: boolean;
  requestProblem: string | null;
  unreadFrames: number;
}

const NO_CHANNEL: ChannelSummary = { channelNotes: [], flushed: false, requestProblem: null, unreadFrames: 0 };

/** One attempt at a shard's child; call {@link run} once. Rejects only on our own failures (disk, spawn). */
export class ShardAttempt {
  private current: AttemptState = "preparing";
  private events: AttemptEvents | null = null;
  private proc: ShardProcess | null = null;
  private unregister: () => void = () => {};
  /** Ends this attempt's pending handshake in the run's gate; idempotent. */
  private leaveGate: () => void = () => {};
  /** Descendants listed at the end-of-run barrier; the preload then skips its own, slower listing. */
  private listedAtEnd: ListedDescendant[] = [];
  /** The model's clock: one reading per socket read, since the events of one read arrived together. */
  private arrivedAtMs = performance.now();
  private held: HeldMarks = { marks: null, count: null };
  private acks: StartAcks | null = null;
  private cost: CostFile | null = null;
  private evals: EvalDirReader | null = null;

  constructor(private readonly o: AttemptOptions) {}

  get state(): AttemptState {
    return this.current;
  }

  /** Runs the attempt to its end. */
  async run(): Promise<AttemptEnd> {
    try {
      return await this.steps();
    } finally {
      // Also when the attempt throws: a handshake left pending would hold every later verdict.
      this.leaveGate();
      releaseMarks(this.held);
      this.acks?.close();
      this.cost?.close();
    }
  }

  private async steps(): Promise<AttemptEnd> {
    const socketPath = this.prepare();
    // Until its handshake ends the child counts as about to dial in; the first report waits for the first wave.
    if (socketPath) this.leaveGate = this.o.ctx.handshakes?.enter() ?? this.leaveGate;
    if (socketPath) await this.openEvents();
    if (this.o.cancelled()) return this.stop(null);
    if (socketPath && this.events) {
      const problem = this.listen(socketPath, this.events);
      if (problem !== null) return this.stop(problem);
    }
    const proc = this.spawn(socketPath);
    const channel = this.events?.channel;
    if (channel) {
      const problem = await this.handshake(channel, proc);
      if (problem !== null) return this.stopChild(proc, channel, problem);
    } else this.advance("tests-running");
    const outcome = await proc.done;
    // At once: a test of another shard may delete the output directory while this evidence is collected.
    const junitFd = holdJUnit(this.o.paths.junit);
    this.advance("group-gone");
    this.unregister();
    this.o.hooks.onSlotFree?.();
    try {
      return { kind: "ran", record: { ...(await this.collect(outcome)), junitFd } };
    } catch (error) {
      if (junitFd !== null) closeSync(junitFd);
      throw error;
    }
  }

  /** Remakes run directories a test may have deleted and resets the shard's files. Throws if they cannot be made. */
  private prepare(): string | null {
    const { paths, ctx, shard } = this.o;
    try {
      ctx.ensureDirs?.();
      this.cost?.close();
      this.cost = new CostFile(paths.cost);
      const adapter = ctx.costAdapter;
      this.evals = adapter ? new EvalDirReader(adapter.dirOf(shard), Date.now() - MTIME_SLACK_MS) : null;
    } catch (error) {
      throw new ShardNotStartedError((error as Error).message ?? String(error));
    }
    // Synchronous: thread-pool unlinks cost more than the calls (bench/README.md, "Where the time goes").
    rmSync(paths.junit, { force: true });
    // Held open by the runner so a test deleting them loses nothing; without the count the preload appends "s".
    releaseMarks(this.held);
    this.held = prepareMarks(paths.marks);
    return this.o.withEvents && ctx.socketDir ? socketPathFor(ctx.socketDir, shard.index) : null;
  }

  private async openEvents(): Promise<void> {
    const { ctx, shard, paths } = this.o;
    const model = new TestEventModel({ root: ctx.root, now: () => this.arrivedAtMs, files: shard.files });
    this.events = { model, journal: await openJournal(journalPathFor(paths.log)), channel: null };
  }

  /** Listens before the spawn; the child dials in once its inspector is up. Null once listening, else why not. */
  private listen(socketPath: string, events: AttemptEvents): string | null {
    const { model, journal } = events;
    const { shard, hooks, ctx } = this.o;
    const acks = (this.acks = new StartAcks(this.o.paths.marks));
    try {
      events.channel = listenForTestEvents({
        socketPath,
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        onEvent: (event, message) => {
          if (event.method === "TestReporter.end") this.drainCost();
          if (event.method === "TestReporter.found") acks.found();
          else if (event.method === "TestReporter.start") acks.start();
          model.apply(event);
          journal.append(event, message);
        },
        sink: {
          found: (id, url, line, name, type, parentId, message) => {
            acks.found();
            model.found(id, url, line, name, type, parentId);
            journal.appendLine(message);
          },
          start: (id, message) => {
            acks.start();
            model.start(id);
            journal.appendLine(message);
          },
          end: (id, status, elapsedNs, message) => {
            this.drainCost();
            model.end(id, status, elapsedNs);
            journal.appendLine(message);
          },
        },
        onRead: () => {
          this.arrivedAtMs = performance.now();
        },
        onRefused: (detail) => hooks.onWarning?.(shard, detail),
        firstTestBarrier: bails(ctx.bunArgs),
        onEndOfRun: () => this.atEndOfRun(),
      });
    } catch (error) {
      return (error as Error).message;
    }
    this.advance("channel-open");
    return null;
  }

  /**
   * Lists the waiting child's descendants, then releases it through its count file: the preload's wait
   * blocks its thread, so no inspector request could reach it. Never throws (a socket handler calls it).
   */
  private atEndOfRun(): void {
    try {
      // Bun writes its JUnit next, and creates no directory for it.
      this.o.ctx.ensureDirs?.();
    } catch {
      // Its JUnit is then missing, and the verdict says why.
    }
    const pid = this.proc?.pid;
    try {
      if (pid) this.listedAtEnd = listDescendants(pid, MAX_DESCENDANTS);
    } catch {
      this.listedAtEnd = [];
    } finally {
      acknowledgeEndOfRun(this.o.paths.marks, this.held);
    }
  }

  private spawn(socketPath: string | null): ShardProcess {
    const { ctx, shard, paths, hooks } = this.o;
    const cookie = `${ctx.runId}:${shard.index}`;
    const env: Record<string, string | undefined> = {
      ...ctx.env,
      ...(ctx.shardEnv?.(shard) ?? {}),
      [SHARD_ENV.cookie]: cookie,
      [SHARD_ENV.inShard]: "1",
      [SHARD_ENV.runnerPid]: String(process.pid),
      [SHARD_ENV.marks]: paths.marks,
      [COST_FILE_ENV]: paths.cost,
      // With --bail Bun ends the run without the afterAll flush: the preload then waits once before the first test.
      [SHARD_ENV.yieldEvents]: socketPath ? (bails(ctx.bunArgs) ? "bail" : "1") : "0",
      // Reverse connect: the runner listens first and the child dials in (events/inspector.ts).
      ...inspectorEnv(socketPath),
    };
    const caps = ctx.capabilities ?? PINNED_CAPABILITIES;
    const argv = shardArgv({
      bun: ctx.bun,
      root: ctx.root,
      files: shard.files,
      junitPath: paths.junit,
      bunArgs: ctx.bunArgs,
      noOrphans: caps.noOrphans,
      ...(ctx.preload ? { preload: ctx.preload } : {}),
    });
    const onState = (state: ProcessState) => {
      if (state === "sweeping" && this.current === "tests-running") this.advance("child-exited");
    };
    const proc = startProcess({
      argv,
      cwd: ctx.root,
      env,
      logPath: paths.log,
      // The console names a batch in one short line; its log keeps the whole list.
      ...(shard.files.length > 1 ? { logHeader: `shardguard: shard ${shard.index}: ${shard.files.join(" ")}` } : {}),
      timeoutMs: ctx.timeoutMs,
      graceMs: ctx.graceMs,
      cookie: `${SHARD_ENV.cookie}=${cookie}`,
      onState,
    });
    this.proc = proc;
    this.advance("spawned");
    this.unregister = hooks.register(proc);
    if (!this.o.cancelled()) hooks.onStart?.(this.view(proc));
    return proc;
  }

  /**
   * Waits for the handshake, which only the child's exit races; after it the channel stays open until the
   * child's side closes, since cutting it drops its last frames. Null once the tests run, else why not.
   */
  private async handshake(channel: EventChannel, proc: ShardProcess): Promise<string | null> {
    let exitedFirst: () => void = () => {};
    const exited = new Promise<never>((_, reject) => {
      exitedFirst = () => reject(new Error("the child exited before the inspector handshake completed"));
    });
    void proc.done.then(() => exitedFirst());
    try {
      await Promise.race([channel.ready, exited]);
    } catch (error) {
      return (error as Error).message;
    } finally {
      this.leaveGate();
    }
    exitedFirst = () => {};
    this.advance("tests-running");
    return null;
  }

  /** The preload still holds the tests, so the child is stopped and the shard runs again without events. */
  private async stopChild(proc: ShardProcess, channel: EventChannel, problem: string): Promise<AttemptEnd> {
    channel.close();
    proc.killNow("cancel");
    await proc.done;
    this.unregister();
    return this.stop(problem);
  }

  private async stop(problem: string | null): Promise<AttemptEnd> {
    await this.events?.journal.close();
    this.events = null;
    this.advance("stopped");
    return { kind: "stopped", problem };
  }

  /** Drains the channel, reads the marks and reduces the events: the attempt's record. */
  private async collect(outcome: ProcessOutcome): Promise<AttemptRecord> {
    const channel = this.events?.channel ? await this.drain(this.events.channel) : NO_CHANNEL;
    await this.events?.journal.close();
    // Other shards' children waiting for their handshake go first: this shard's slot is already free.
    await this.o.ctx.handshakes?.settled(VERDICT_WAIT_MS);
    const marks = await readMarks(this.o.paths.marks, this.held);
    const model = this.events?.model ?? null;
    // Tests defined through helper modules: mapped to their files by the preload's file records.
    model?.applyFileStarts(marks.filesStarted);
    const cost = this.cost?.finish(() => this.testInFlight()) ?? null;
    const evalCost = this.evals?.finish(() => this.testInFlight()) ?? null;
    const { unreadFrames, ...fromChannel } = channel;
    const record: AttemptRecord = {
      outcome,
      marks,
      events: model ? toEventEvidence(model, true, undefined, unreadFrames) : null,
      failedEnds: model?.failedEnds() ?? 0,
      errorsLeftOut: model?.errorsLeftOut() ?? 0,
      ...fromChannel,
      listedAtEnd: this.listedAtEnd,
      marksDeleted: marksDeleted(this.held),
      cost,
      evalCost,
    };
    // Let the collector have the model's records before the verdict builds its entries.
    this.events = null;
    this.advance("evidence-collected");
    return record;
  }

  /** Waits for the child's side to close (never on a stuck one), closes the channel, says its notes once. */
  private async drain(channel: EventChannel): Promise<ChannelSummary> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      channel.closed,
      new Promise((resolve) => (timer = setTimeout(resolve, CHANNEL_CLOSE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    channel.close();
    const stats = channel.stats();
    const notes = channelNotes(stats);
    if (notes.length > 0) this.o.hooks.onWarning?.(this.o.shard, notes.join("; "));
    return {
      channelNotes: notes,
      flushed: stats.flushed,
      requestProblem: stats.requestError ? `the child's inspector ${stats.requestError}` : null,
      unreadFrames: stats.oversized,
    };
  }

  /**
   * Reads the cost lines appended so far, before an `end` takes its test out of flight: a line read then is the
   * ending test's even when the next test's `start` is still unread (docs/cost.md, "Which test a line is charged to").
   */
  private drainCost(): void {
    this.cost?.drain(() => this.testInFlight());
    this.evals?.poll(() => this.testInFlight(), true);
  }

  /** The full name of the test in flight, as the reports name it (results/text.ts); null when none or no events. */
  private testInFlight(): string | null {
    const test = this.events?.model.running();
    return test ? cleanEventName(test.fullName) : null;
  }

  private view(proc: ShardProcess): RunningShard {
    return {
      shard: this.o.shard,
      process: proc,
      logPath: this.o.paths.log,
      inFlight: () => {
        const test = this.events?.model.running();
        return test ? { name: cleanEventName(test.fullName), startedAtMs: test.startedAtMs } : null;
      },
      spentUsd: () => {
        this.cost?.drain(() => this.testInFlight());
        // The adapter's files at a bounded rate (exec/eval-dir.ts EVAL_POLL_MS): they are whole JSON documents.
        this.evals?.poll(() => this.testInFlight());
        return (this.cost?.spend.total.usd ?? 0) + (this.evals?.spentUsd() ?? 0);
      },
    };
  }

  private advance(to: AttemptState): void {
    if (STATE_ORDER.indexOf(to) <= STATE_ORDER.indexOf(this.current))
      throw new Error(`shard attempt: ${this.current} cannot move back to ${to}`);
    this.current = to;
  }
}
