/**
 * Writes a run's reports atomically, as often as the run changes but never so often it slows the run: interim
 * writes coalesce and are spaced, the final one is never delayed, and they land in order.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { writeDocumentsAtomic } from "../report/atomic-stream.ts";
import { logTail } from "../report/console.ts";
import { ctrfChunks } from "../report/ctrf.ts";
import { type HtmlHistory, htmlChunks } from "../report/html.ts";
import { jsonChunks } from "../report/json.ts";
import { junitChunks } from "../report/junit.ts";
import { SUCCESSFUL_SHARD_STATUSES, type RunReport } from "../results/report-model.ts";
import { sharedTestChecks } from "../results/shared-checks.ts";
import { redactReport } from "../results/redact.ts";
import { readRegularFileSync } from "../util/regular-file.ts";
import { fullCollection } from "../util/tuning.ts";

/** Minimum time between two interim report writes, ms: reports on disk lag at most this much, always valid. */
export const INTERIM_WRITE_GAP_MS = 200;

/** Interim writes are spaced by at least this many times their CPU cost, bounding their share of the runner. */
export const INTERIM_WRITE_COST_FACTOR = 20;

/** Tests in a report from which a write starts with a full garbage collection (see writeNow). */
export const LARGE_REPORT_TESTS = 20_000;

/** Where the reports go. */
export interface ReportTargets {
  junit: string;
  json: string;
  ctrf: string;
  /** report.html; none when absent. */
  html?: string;
  /** The run's own directory (OUT/runs/<id>), which gets a copy of each; null before it exists. */
  runDir: () => string | null;
  /**
   * report.html's run history for a report (history/strips.ts), once read; the final write waits for it, an interim
   * one goes without until it is there; none without a history.
   */
  htmlHistory?: Promise<((report: RunReport) => HtmlHistory) | null>;
}

/** Serialized, coalescing report writer: {@link write}'s builder runs when the write does, so it shows every change. */
export class ReportWriter {
  /** Report writes run one after another. */
  private writing: Promise<unknown> = Promise.resolve();
  private queuedInterim: Promise<RunReport | null> | null = null;
  private lastInterimAt = -Infinity;
  /**
   * The runner's CPU time during the last write, ms: building, rendering and the kernel's file work, not the disk
   * wait; rendering alone undercounts it (bench/README.md, "Where the time goes").
   */
  private lastWriteCpuMs = 0;
  private finalRequested = false;
  /** Ends the spacing wait of a queued interim write early (the final write was requested). */
  private wakeInterim: (() => void) | null = null;
  /** Why the final write failed, or null: the files are then stale or missing, so the run must not exit 0. */
  finalWriteError: string | null = null;
  /** After a failed final write, this run's own `report.json` when it holds the final report (it lands first). */
  finalRunCopy: string | null = null;
  /** Redacted log tails for report.html, by log path: a decided shard's log is read once. */
  private readonly tails = new Map<string, string>();
  /** {@link ReportTargets.htmlHistory} once it is read. */
  private historyOf: ((report: RunReport) => HtmlHistory) | null = null;

  /**
   * @param redact applied to every report before rendering (reports leave the machine; logs stay raw, mode 0600)
   * @param onError told when a write fails; the run goes on (the next write tries again)
   */
  constructor(
    private readonly targets: ReportTargets,
    private readonly redact: ((text: string) => string) | undefined,
    private readonly onError: (message: string) => void,
  ) {
    void targets.htmlHistory?.then((of) => (this.historyOf = of));
  }

  /**
   * Writes the run's own copies, then the stable paths. An interim write joins one queued and waits out the gap
   * (INTERIM_WRITE_GAP_MS or the cost factor); a final write cuts the wait and drops the waiting interim write.
   *
   * @returns the report as built (before redaction); null for an interim write dropped for the final one
   */
  write(final: true, build: () => RunReport): Promise<RunReport>;
  write(final: boolean, build: () => RunReport): Promise<RunReport | null>;
  write(final: boolean, build: () => RunReport): Promise<RunReport | null> {
    if (!final && this.queuedInterim) return this.queuedInterim;
    if (final) {
      this.finalRequested = true;
      this.wakeInterim?.();
    }
    const next = this.writing.then(async () => {
      if (!final) {
        const gap = Math.max(INTERIM_WRITE_GAP_MS, INTERIM_WRITE_COST_FACTOR * this.lastWriteCpuMs);
        const wait = this.lastInterimAt + gap - performance.now();
        if (wait > 0 && !this.finalRequested) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, wait);
            this.wakeInterim = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          this.wakeInterim = null;
        }
        this.queuedInterim = null;
        if (this.finalRequested) return null;
        this.lastInterimAt = performance.now();
      }
      // The final page carries the history's strips: their read (begun with the run) is awaited.
      if (final) await this.targets.htmlHistory;
      const began = process.cpuUsage();
      const report = build();
      const error = await this.writeNow(report);
      const used = process.cpuUsage(began);
      this.lastWriteCpuMs = (used.user + used.system) / 1000;
      if (final) {
        this.finalWriteError = error;
        if (error !== null) this.finalRunCopy = this.landedRunCopy(report);
      }
      return report;
    });
    if (!final) this.queuedInterim = next;
    this.writing = next.catch(() => {});
    return next;
  }

  /** report.html's log tails by shard index: shards that did not pass or hold a failing or flaky test; read once. */
  private async logTails(report: RunReport): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    for (const shard of report.shards) {
      if (shard.logPath === null) continue;
      const worth =
        !SUCCESSFUL_SHARD_STATUSES.has(shard.status) ||
        shard.tests.some((t) => t.flaky || (t.status !== "passed" && t.status !== "skipped" && t.status !== "todo"));
      if (!worth) continue;
      let tail = this.tails.get(shard.logPath);
      if (tail === undefined) {
        tail = await logTail(shard.logPath);
        if (this.redact) tail = this.redact(tail);
        this.tails.set(shard.logPath, tail);
      }
      if (tail) out.set(shard.index, tail);
    }
    return out;
  }

  /** The run's own report.json when its head names `report`'s run and end time (final only); else null. */
  private landedRunCopy(report: RunReport): string | null {
    const runDir = this.targets.runDir();
    if (runDir === null || report.finishedAt === null) return null;
    const file = path.join(runDir, "report.json");
    try {
      const head = readRegularFileSync(file, 4096).toString("utf8");
      const ours = head.includes(`"runId": ${JSON.stringify(report.runId)}`);
      return ours && head.includes(`"finishedAt": ${JSON.stringify(report.finishedAt)}`) ? file : null;
    } catch {
      return null;
    }
  }

  /**
   * Writes the four reports; returns the error's message when one could not be written (told to `onError` too), else
   * null.
   */
  private async writeNow(report: RunReport): Promise<string | null> {
    try {
      // Redaction copies only the entries it changes (results/redact.ts).
      const safe = this.redact ? redactReport(report, this.redact) : report;
      // A large run's heap is mostly garbage by now: collected, it is reused instead of grown (util/tuning.ts).
      if (safe.shards.reduce((n, shard) => n + shard.tests.length, 0) >= LARGE_REPORT_TESTS) fullCollection();
      const logTails = this.targets.html !== undefined ? await this.logTails(safe) : new Map<number, string>();
      const runDir = this.targets.runDir();
      // Private like the rest of it (engine/run-dirs.ts), when a test deleted it.
      if (runDir) mkdirSync(runDir, { recursive: true, mode: 0o700 });
      // Streamed as rendered, never held whole (report/atomic-stream.ts; bench/README.md). None lands before all
      // three are complete, and the schema check runs entry by entry as they render, so a bad report lands nowhere.
      const [jsonCheck, ctrfCheck] = sharedTestChecks(2);
      const reports: [name: string, target: string, chunks: () => Iterable<string>][] = [
        ["report.json", this.targets.json, () => jsonChunks(safe, jsonCheck)],
        ["junit.xml", this.targets.junit, () => junitChunks(safe)],
        ["ctrf.json", this.targets.ctrf, () => ctrfChunks(safe, ctrfCheck)],
      ];
      const html = this.targets.html;
      if (html !== undefined)
        reports.push(["report.html", html, () => htmlChunks(safe, { logTails, history: this.historyOf?.(safe) })]);
      await writeDocumentsAtomic(
        reports.map(([name, target, chunks]) => ({
          targets: runDir ? [path.join(runDir, name), target] : [target],
          chunks: chunks(),
        })),
      );
      return null;
    } catch (error) {
      const message = (error as Error).message;
      this.onError(`shardguard: could not write the reports: ${message}`);
      return message;
    }
  }
}
