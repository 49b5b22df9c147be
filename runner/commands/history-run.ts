/**
 * The history in a run (docs/history.md, "Use in runs"): read before it (durations, flaky tests, the automatic
 * quarantine), appended after it. Never at the run's expense: any failure is one note and the run goes on.
 */
import { existsSync } from "node:fs";
import type { HistorySettings } from "../config/history-settings.ts";
import { executeRun } from "../engine/execute.ts";
import type { Host } from "../engine/host.ts";
import { autoQuarantined, passedLast, passOrFail } from "../history/classify.ts";
import {
  fileDurationsOf,
  flakyAnswers,
  flakyCandidates,
  loadOutcomes,
  type TestOutcomes,
  type TestRef,
} from "../history/queries.ts";
import { type GitInfo, gitInfo, testKey } from "../history/rows.ts";
import { AppendWorker } from "../history/append-job.ts";
import { openStore } from "../history/open.ts";
import { htmlHistory, type PastStrips } from "../history/strips.ts";
import type { HistoryStore } from "../history/store.ts";
import type { RunReport } from "../results/report-model.ts";
import { plural } from "../report/console.ts";
import { oneLine } from "../util/format.ts";

/** Runs the history reads for scheduling and flakiness. */
const WINDOW = 20;
/** `quarantine = "auto"`: a flip rate at least this over the window on the default branch. */
export const AUTO_QUARANTINE_RATE = 0.2;
/** Passes in a row after which a quarantined test is ready to leave quarantine. */
export const READY_TO_LEAVE = 5;
/** Test names a console line lists before "and N more". */
const LISTED = 5;

/** What the run takes from the history before it starts. */
export interface HistoryBefore {
  /** Per-file durations of the newest run that had the file, ms. */
  durations: Map<string, number>;
  /** The keys quarantined for this run. */
  quarantine: Set<string>;
  /** report.html's strips' past (issue 36), read by the worker beside the run; null without a history or HTML. */
  strips: Promise<PastStrips | null> | null;
}

/**
 * The history of one run: read on the main thread before it, appended by a worker thread (history/append-job.ts)
 * while the final reports are written. Every failure is one note (the first only) and a history that does nothing.
 */
export class RunHistory {
  private tests: TestOutcomes[] = [];
  private noted = false;
  private git: GitInfo | null = null;

  private constructor(
    private store: HistoryStore | null,
    private appender: AppendWorker | null,
    private readonly where: string,
    private readonly note: (line: string) => void,
  ) {}

  /** Opens the history of `settings` and starts its append worker; a failure is a note. */
  static async open(settings: HistorySettings, note: (line: string) => void): Promise<RunHistory> {
    const target = settings.target;
    const where = target === null ? "" : target.kind === "sqlite" ? target.path : "the PostgreSQL history";
    const history = new RunHistory(null, null, where, note);
    if (target === null) return history;
    try {
      history.store = await openStore(target);
      history.appender = new AppendWorker(target);
    } catch (error) {
      history.say(history.fail(error));
    }
    return history;
  }

  /**
   * Reads what the run uses; `quarantine` comes from the settings or, for "auto", from the flip rates. The commit
   * (git's answers in `root`, or CI's variables in `env`) is read here too, off the run's end.
   */
  async before(
    settings: HistorySettings,
    root: string,
    env: Record<string, string | undefined>,
    stripFiles: ReadonlySet<string> | null = null,
  ): Promise<HistoryBefore> {
    const configured = settings.quarantine === "auto" ? [] : settings.quarantine;
    const result: HistoryBefore = { durations: new Map(), quarantine: new Set(configured), strips: null };
    if (!this.store) return result;
    try {
      result.durations = await fileDurationsOf(this.store, { last: WINDOW });
      if (settings.quarantine === "auto") {
        const past = await loadOutcomes(
          this.store,
          { last: WINDOW },
          await flakyCandidates(this.store, { last: WINDOW }),
        );
        for (const t of past) if (autoQuarantined(t.outcomes, AUTO_QUARANTINE_RATE)) result.quarantine.add(t.key);
      }
      // Only earlier runs are needed: read beside the run, this run's status added at render.
      if (stripFiles && this.appender) result.strips = this.appender.readStrips(stripFiles);
      this.git = gitInfo(root, env);
    } catch (error) {
      this.say(this.fail(error));
    }
    await this.closeStore();
    return result;
  }

  /** Hands the final report to the worker, which reads the spoken-of tests' past and appends it. */
  handOver(report: RunReport): void {
    const git = this.git ?? { sha: null, branch: null, defaultBranch: null };
    this.appender?.start(report, git, spokenOf(report), WINDOW);
  }

  /**
   * Waits for the worker's append, then gives the console's history lines (new failures, known flaky ones), the
   * quarantine's, and the history's note if it failed.
   */
  async closingLines(report: RunReport): Promise<string[]> {
    const lines: string[] = [];
    if (this.appender) {
      this.tests = await this.appender.past;
      const error = await this.appender.done;
      const line = error === null ? null : this.fail(new Error(error));
      if (line !== null) lines.push(line);
    }
    return [...lines, ...endLines(report, this.tests), ...quarantineLines(report, this.tests)];
  }

  /** The outcomes the worker read of the tests the console's end speaks of, oldest first. */
  get pastTests(): readonly TestOutcomes[] {
    return this.tests;
  }

  /** Closes the store and ends the worker (after {@link closingLines}, so no run is lost). */
  async close(): Promise<void> {
    await this.closeStore();
    this.appender?.terminate();
    this.appender = null;
  }

  private async closeStore(): Promise<void> {
    const store = this.store;
    this.store = null;
    await store?.close().catch(() => {});
  }

  private say(line: string | null): void {
    if (line !== null) this.note(line);
  }

  /** The note of the history's first failure (null after it); the history does nothing from then on. */
  private fail(error: unknown): string | null {
    const first = !this.noted;
    this.noted = true;
    void this.closeStore();
    this.appender?.terminate();
    this.appender = null;
    if (!first) return null;
    return (
      `shardguard: note: run history ${this.where} not used: ${oneLine((error as Error).message ?? String(error))}; ` +
      "the run goes on without it"
    );
  }
}

/** The tests of `report` the console's end looks up in the history: the failed and the quarantined. */
function spokenOf(report: RunReport): TestRef[] {
  const out: TestRef[] = [];
  for (const shard of report.shards)
    for (const test of shard.tests)
      if (test.quarantined || passOrFail(test.status) === "fail") out.push({ file: test.file, name: test.name });
  return out;
}

/**
 * Per-file durations for sizing `--files-per-shard auto` batches before the plan exists: the history's when the
 * run has no `--timings` and a history is there, else `timings` unchanged. Read-only: a SQLite history that does
 * not exist yet is not created; a failure is silent here, since the run's own open says it in one note.
 */
export async function batchDurations(
  run: { filesPerShard: number | "auto"; timings: readonly string[] },
  settings: HistorySettings,
  timings: ReadonlyMap<string, number>,
): Promise<ReadonlyMap<string, number>> {
  const target = settings.target;
  if (run.filesPerShard !== "auto" || run.timings.length > 0 || target === null) return timings;
  if (target.kind === "sqlite" && !existsSync(target.path)) return timings;
  let store: HistoryStore | null = null;
  try {
    store = await openStore(target);
    return await fileDurationsOf(store, { last: WINDOW });
  } catch {
    return timings;
  } finally {
    await store?.close().catch(() => {});
  }
}

/** "a, b, c and 2 more". */
function listed(names: readonly string[]): string {
  const shown = names.slice(0, LISTED).map((n) => oneLine(n));
  return names.length > LISTED ? `${shown.join(", ")} and ${names.length - LISTED} more` : shown.join(", ");
}

/** The console's end from the history: failures new since the test's last pass, known flaky failures. */
export function endLines(report: RunReport, before: readonly TestOutcomes[]): string[] {
  const past = new Map(before.map((t) => [t.key, t]));
  const flaky = new Map(flakyAnswers(before).map((f) => [f.test, f]));
  const fresh: string[] = [];
  const old: string[] = [];
  const known: string[] = [];
  for (const shard of report.shards)
    for (const test of shard.tests) {
      if (passOrFail(test.status) !== "fail") continue;
      const key = testKey(test.file, test.name);
      const f = flaky.get(key);
      if (f) known.push(`${key} (flip rate ${Math.round(f.flipRate * 100)}%)`);
      const last = past
        .get(key)
        ?.outcomes.filter((o) => passOrFail(o.status) !== null)
        .at(-1);
      (last === undefined || last.status === "passed" ? fresh : old).push(key);
    }
  const lines: string[] = [];
  if (fresh.length > 0)
    lines.push(`shardguard: new since their last pass: ${plural(fresh.length, "failure")}: ${listed(fresh)}`);
  if (old.length > 0) lines.push(`shardguard: failing before this run too: ${listed(old)}`);
  if (known.length > 0) lines.push(`shardguard: known flaky (history): ${listed(known)}`);
  return lines;
}

/** The console's quarantine lines: what ran quarantined, what failed so, what is ready to leave. */
export function quarantineLines(report: RunReport, before: readonly TestOutcomes[] = []): string[] {
  const past = new Map(before.map((t) => [t.key, t]));
  const ran: string[] = [];
  const failed: string[] = [];
  const ready: string[] = [];
  for (const shard of report.shards)
    for (const test of shard.tests) {
      if (!test.quarantined) continue;
      const key = testKey(test.file, test.name);
      ran.push(key);
      if (passOrFail(test.status) === "fail") failed.push(`${key} (${test.status})`);
      const outcomes = [
        ...(past.get(key)?.outcomes ?? []),
        { status: test.status } as TestOutcomes["outcomes"][number],
      ];
      if (passedLast(outcomes, READY_TO_LEAVE)) ready.push(key);
    }
  if (ran.length === 0) return [];
  const lines = [`shardguard: quarantined: ${plural(ran.length, "test")} ran; their failures do not fail the run`];
  if (failed.length > 0) lines.push(`shardguard: quarantined and failed: ${listed(failed)}`);
  if (ready.length > 0)
    lines.push(`shardguard: ready to leave quarantine (passed ${READY_TO_LEAVE} runs in a row): ${listed(ready)}`);
  return lines;
}

/** Entries of the quarantine naming a file the plan does not hold: a note each (tests move; not an error). */
export function quarantineNotes(entries: readonly string[], plannedFiles: ReadonlySet<string>): string[] {
  return entries
    .filter((e) => !plannedFiles.has(e.slice(0, e.indexOf(" > "))))
    .map((e) => `shardguard: note: quarantine entry ${JSON.stringify(e)} names no planned test`);
}

/** Quarantine entries whose file ran but no test of that name did: a note each. */
export function unmatchedQuarantineNotes(entries: readonly string[], report: RunReport): string[] {
  const files = new Set(report.shards.flatMap((s) => s.files));
  const keys = new Set(report.shards.flatMap((s) => s.tests.map((t) => testKey(t.file, t.name))));
  return entries
    .filter((e) => files.has(e.slice(0, e.indexOf(" > "))) && !keys.has(e))
    .map((e) => `shardguard: note: quarantine entry ${JSON.stringify(e)} names no test that ran`);
}

/**
 * {@link executeRun} with the history around it: its durations order the shards when no timings were given, its
 * quarantine marks tests, and the final report is appended; prints the history's and quarantine's lines.
 * @returns the run's exit code
 */
export async function executeWithHistory(
  inputs: Parameters<typeof executeRun>[0],
  settings: HistorySettings,
  host: Host,
): Promise<number> {
  const history = await RunHistory.open(settings, host.stdout);
  try {
    const stripFiles = inputs.settings.html ? new Set(inputs.plan.included.keys()) : null;
    const before = await history.before(settings, inputs.settings.root, host.env, stripFiles);
    const strips = before.strips;
    const entries = settings.quarantine === "auto" ? [] : settings.quarantine;
    for (const note of quarantineNotes(entries, new Set(inputs.plan.included.keys()))) host.stdout(note);
    const timings = inputs.settings.timings.length > 0 ? inputs.timings : before.durations;
    const result = await executeRun(
      {
        ...inputs,
        timings,
        quarantine: before.quarantine,
        ...(strips
          ? { htmlHistory: strips.then((past) => past && ((report: RunReport) => htmlHistory(past, report))) }
          : {}),
        onFinalReport: (report) => history.handOver(report),
        closingLines: async (report) => [
          ...(await history.closingLines(report)),
          ...unmatchedQuarantineNotes(entries, report),
        ],
      },
      host,
    );
    return result.exitCode;
  } finally {
    await history.close();
  }
}
