/**
 * Writing a run's three reports (JUnit, JSON, CTRF) atomically, as often as
 * the run changes but never so often that writing slows the run: interim
 * writes coalesce and are spaced apart, the final write is never delayed,
 * and writes land in order so an older snapshot never lands last.
 */
import path from "node:path";
import { renderCtrf } from "../report/ctrf.ts";
import { renderJson } from "../report/json.ts";
import { renderJUnit } from "../report/junit.ts";
import { validReport, type RunReport } from "../results/model.ts";
import { redactReport } from "../results/redact.ts";
import { writeFileAtomic } from "../util/atomic.ts";

/**
 * Minimum time between two interim report writes, ms. Reports on disk are
 * then at most this much behind the run, and always valid.
 */
export const INTERIM_WRITE_GAP_MS = 200;

/** Tests in a report from which each rendered format is followed by a full garbage collection. */
export const LARGE_REPORT_TESTS = 20_000;

/** Where the reports go. */
export interface ReportTargets {
  junit: string;
  json: string;
  ctrf: string;
  /** The run's own directory (OUT/runs/<id>), which gets a copy of each; null before it exists. */
  runDir: () => string | null;
}

/**
 * Serialized, coalescing report writer. {@link write} takes a function that
 * builds the report, called when the write actually runs, so a coalesced
 * write shows every change made while it waited.
 */
export class ReportWriter {
  /** Report writes run one after another. */
  private writing: Promise<unknown> = Promise.resolve();
  private queuedInterim: Promise<RunReport | null> | null = null;
  private lastInterimAt = -Infinity;
  /**
   * CPU time of the last write, ms: building and rendering, not the disk.
   * Waiting for fsync is no cost to the run, and counting it (40-100 ms
   * for six files on a busy disk) spaced interim writes by up to a second.
   */
  private lastRenderMs = 0;
  private finalRequested = false;
  /** Ends the spacing wait of a queued interim write early (the final write was requested). */
  private wakeInterim: (() => void) | null = null;

  /**
   * @param redact applied to every report before rendering (reports leave the machine; logs stay raw, mode 0600)
   * @param onError told when a write fails; the run goes on (the next write tries again)
   */
  constructor(
    private readonly targets: ReportTargets,
    private readonly redact: ((text: string) => string) | undefined,
    private readonly onError: (message: string) => void,
  ) {}

  /**
   * Writes the reports: the run's own copies, then the stable paths (last
   * finisher wins). An interim write joins one already queued; it waits
   * until INTERIM_WRITE_GAP_MS (or ten times the last write's cost, since
   * rendering is O(tests); the disk is not counted) after the previous one. A final write cuts that
   * wait short and the waiting interim write is dropped: the final one,
   * queued right behind it, shows everything it would have shown (waiting
   * out the gap at the end of a run cost up to ten report writes of wall
   * time, bench/README.md).
   *
   * @returns the report as built (before redaction); null for an interim
   *   write dropped in favour of the final one
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
        const gap = Math.max(INTERIM_WRITE_GAP_MS, 10 * this.lastRenderMs);
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
      const began = performance.now();
      const report = build();
      this.lastRenderMs = performance.now() - began;
      await this.writeNow(report);
      return report;
    });
    if (!final) this.queuedInterim = next;
    this.writing = next.catch(() => {});
    return next;
  }

  private async writeNow(report: RunReport): Promise<void> {
    try {
      const redactBegan = performance.now();
      const safe = this.redact ? redactReport(report, this.redact) : report;
      // JSON and CTRF render the checked copy (validReport), checked once here
      // rather than once by each renderer.
      const valid = validReport(safe);
      this.lastRenderMs += performance.now() - redactBegan;
      const runDir = this.targets.runDir();
      // One report rendered at a time, its copies written, then dropped: the
      // three texts of 100,000 tests are ~75 MB together, and holding them
      // at once set the runner's peak (bench/README.md). For each report
      // the run's own copy lands before the stable path.
      const reports: [name: string, target: string, render: () => string][] = [
        ["junit.xml", this.targets.junit, () => renderJUnit(safe)],
        ["report.json", this.targets.json, () => renderJson(valid)],
        ["ctrf.json", this.targets.ctrf, () => renderCtrf(valid)],
      ];
      const large = safe.shards.reduce((n, shard) => n + shard.tests.length, 0) >= LARGE_REPORT_TESTS;
      for (const [name, target, render] of reports) {
        const began = performance.now();
        const text = render();
        this.lastRenderMs += performance.now() - began;
        if (runDir) await writeFileAtomic(path.join(runDir, name), text);
        await writeFileAtomic(target, text);
        // Rendering a large report leaves ~100 MiB of short-lived strings and
        // objects per format, which Bun's collector let pile up across the
        // three: a full collection after each one cut the runner's peak for
        // 100,000 tests from 578 to 402 MiB, for ~0.15 s each (bench/README.md).
        if (large) Bun.gc(true);
      }
    } catch (error) {
      this.onError(`shardguard: could not write the reports: ${(error as Error).message}`);
    }
  }
}
