/**
 * The main thread's side of the history's append (append-worker.ts): the worker starts with the run, gets the final
 * report's rows as soon as the report is built, and works while the reports are written, so the inserts of a large
 * run overlap the JUnit, JSON, CTRF and HTML writing instead of following it (bench/history-append.ts).
 */
import path from "node:path";
import type { RunReport } from "../results/report-model.ts";
import { PACKAGE_ROOT } from "../util/package-root.ts";
import type { TestOutcomes, TestRef } from "./queries.ts";
import { type GitInfo, runRow, testRows } from "./rows.ts";
import { type RunRow, TEST_COLUMNS } from "./schema.ts";
import { flatCells, type HistoryTarget } from "./store.ts";
import type { PastStrips } from "./strips.ts";

/**
 * A source file beside the compiled CLI, as the guardian and the preload are (runner/cli/compiled.ts): the bundle
 * holds no second entry point.
 */
export const APPEND_WORKER = path.join(PACKAGE_ROOT, "runner", "history", "append-worker.ts");

/** What the worker gets: where, the run's row, its tests' cells as JSON (cheap to post), whose past to read. */
export interface AppendJob {
  target: HistoryTarget;
  run: RunRow;
  /** JSON of every `tests` row's cells, flat, in TEST_COLUMNS order. */
  cells: string;
  spoken: TestRef[];
  /** Runs the past is read over. */
  window: number;
}

/** The worker's other job, posted as the run starts: report.html's strips of the planned files (strips.ts). */
export interface StripsJob {
  target: HistoryTarget;
  files: string[];
}

/** What the worker answers: "past" first, always; then "done" or "error"; "strips" to a {@link StripsJob}. */
export type AppendReply =
  | { kind: "past"; past: TestOutcomes[] }
  | { kind: "strips"; strips: PastStrips | null }
  | { kind: "done"; added: boolean }
  | { kind: "error"; message: string };

/** One run's append in a worker thread. */
export class AppendWorker {
  private readonly worker: Worker;
  private pastSeen!: (past: TestOutcomes[]) => void;
  private finished!: (error: string | null) => void;
  private stripsSeen: (strips: PastStrips | null) => void = () => {};
  /** The past of the spoken-of tests as read before the append; [] when the history failed. */
  readonly past = new Promise<TestOutcomes[]>((resolve) => (this.pastSeen = resolve));
  /** Settles once the worker is done: null, or the failure's message (the run's one note). */
  readonly done = new Promise<string | null>((resolve) => (this.finished = resolve));

  /** Starts the worker now, so it has loaded its modules by the run's end. */
  constructor(private readonly target: HistoryTarget) {
    this.worker = new Worker(APPEND_WORKER);
    this.worker.onmessage = (event: MessageEvent<AppendReply>) => {
      const reply = event.data;
      if (reply.kind === "past") this.pastSeen(reply.past);
      else if (reply.kind === "strips") this.stripsSeen(reply.strips);
      else this.finished(reply.kind === "error" ? reply.message : null);
    };
    this.worker.onerror = (event) => this.fail(event.message || "its worker failed");
  }

  /** Hands the final report to the worker; returns at once (the rows are posted as one string). */
  start(report: RunReport, git: GitInfo, spoken: TestRef[], window: number): void {
    try {
      const cells = JSON.stringify(flatCells(testRows(report), TEST_COLUMNS));
      const job: AppendJob = { target: this.target, run: runRow(report, git, "run"), cells, spoken, window };
      this.worker.postMessage(job);
    } catch (error) {
      this.fail((error as Error).message ?? String(error));
    }
  }

  /**
   * Reads report.html's strips of `files` in the worker, beside the run (issue 36); null when the history failed
   * (the append's own failure then says why).
   */
  readStrips(files: ReadonlySet<string>): Promise<PastStrips | null> {
    const strips = new Promise<PastStrips | null>((resolve) => (this.stripsSeen = resolve));
    const job: StripsJob = { target: this.target, files: [...files] };
    this.worker.postMessage(job);
    return strips;
  }

  /** Gives up: the past is empty and `done` says why. */
  fail(message: string): void {
    this.pastSeen([]);
    this.stripsSeen(null);
    this.finished(message);
  }

  /** Ends the worker; call after {@link done} settled, or to abandon a worker that got no job. */
  terminate(): void {
    this.fail("the run ended before its report was built");
    this.worker.terminate();
  }
}
