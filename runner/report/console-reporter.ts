/**
 * The console as one more reporter of a run: a line when the run starts,
 * when a shard starts and ends (with the tail of a non-passing shard's log),
 * when processes are swept, and the summary. It renders what the run tells
 * it and decides nothing. Lines are redacted before anything cuts them, so
 * no cut can split a secret.
 */
import type { PlannedShard } from "../plan/plan.ts";
import { SUCCESSFUL_SHARD_STATUSES } from "../results/codes.ts";
import type { RunReport, ShardResult } from "../results/report-model.ts";
import { redactReport, redactShard } from "../results/redact.ts";
import { oneLine, plural } from "../util/format.ts";
import { endLine, logTail, startLine, summaryLines, type ConsoleOut } from "./console.ts";

/** A process the run killed, as the console names it. */
export interface KilledProcess {
  pid: number;
  command: string;
}

/** The events of a run a reporter is told about, in order. */
export interface RunReporter {
  onRunStart(info: {
    runId: string;
    shards: number;
    files: number;
    toRun: number;
    jobs: number;
    timeoutMs: number;
    graceMs: number;
  }): void;
  /** What the shards' Bun lacks (results/bun-capabilities.ts `missingFeatures`), once per run; nothing when empty. */
  onBunMissing(missing: readonly string[]): void;
  /** Processes killed by a sweep: left by earlier runs whose runner died, or of this run after its shards ended. */
  onSweep(kind: "stale-runs" | "end-of-run", killed: readonly KilledProcess[]): void;
  /** @param waited what the shard waited for before it started ("waited 41.2 s for resource X"), or "" */
  onShardStart(shard: PlannedShard, total: number, timeoutMs: number, logPath: string, waited?: string): void;
  onShardWarning(shard: PlannedShard, total: number, message: string): void;
  /** A shard's processes are gone and its slot is free; its verdict (onShardEnd) follows once its evidence is read. */
  onShardExited(shard: PlannedShard): void;
  /** After a shard's result is decided; resolves once its lines (and log tail) are printed, as one block. */
  onShardEnd(result: ShardResult, total: number): Promise<void>;
  onCancel(signal: "SIGINT" | "SIGTERM", running: number): void;
  /** The final report; `filterMatchedNothing` from the run verdict (results/run-verdict.ts). */
  /** @param paths the reports written; null when the final write failed (no path is named then) */
  /** `runCopy`: with `paths` null, the run's own report.json when it holds the final report. */
  onRunEnd(
    report: RunReport,
    paths: { junit: string; json: string; ctrf: string; html?: string } | null,
    filterMatchedNothing: boolean,
    runCopy?: string | null,
    closing?: readonly string[],
  ): void;
}

/** `pid command; …`, each command redacted then cut to 60 characters. */
const describe = (list: readonly KilledProcess[], redact: (text: string) => string) =>
  list.map((e) => `${e.pid} ${oneLine(redact(e.command)).slice(0, 60)}`).join("; ");

/** The plain-line console reporter (the TTY status area, report/progress.ts, draws around these lines). */
export class ConsoleReporter implements RunReporter {
  private readonly redact: (text: string) => string;
  /** Shards whose processes are gone but whose end block is not printed yet. */
  private readonly ending = new Set<number>();
  /** START lines of shards that began while another's end block was pending: printed after it, the real order. */
  private held: string[] = [];

  constructor(
    private readonly out: ConsoleOut,
    redact?: (text: string) => string,
  ) {
    this.redact = redact ?? ((t) => t);
  }

  onRunStart(i: Parameters<RunReporter["onRunStart"]>[0]): void {
    this.out.line(
      `shardguard: run ${i.runId}: ${plural(i.shards, "shard")} (${plural(i.files, "file")}), ` +
        `${i.toRun} to run, jobs ${i.jobs}, timeout ${i.timeoutMs / 1000}s, grace ${i.graceMs / 1000}s`,
    );
  }

  onBunMissing(missing: readonly string[]): void {
    if (missing.length > 0) this.out.line(`shardguard: note: ${missing.join("; ")}`);
  }

  onSweep(kind: "stale-runs" | "end-of-run", killed: readonly KilledProcess[]): void {
    if (killed.length === 0) return;
    this.out.line(
      kind === "stale-runs"
        ? `shardguard: killed ${plural(killed.length, "process")} left by earlier runs whose runner died: ` +
            `${describe(killed, this.redact)}`
        : `shardguard: killed ${plural(killed.length, "leftover process")} of this run: ` +
            `${describe(killed, this.redact)}`,
    );
  }

  onShardStart(shard: PlannedShard, total: number, timeoutMs: number, logPath: string, waited = ""): void {
    const line = startLine(shard, total, timeoutMs, logPath, waited);
    if (this.ending.size > 0) this.held.push(line);
    else this.out.line(line);
  }

  onShardExited(shard: PlannedShard): void {
    this.ending.add(shard.index);
  }

  onShardWarning(shard: PlannedShard, total: number, message: string): void {
    this.out.line(`[${shard.index}/${total}] WARNING ${oneLine(message)}`);
  }

  async onShardEnd(result: ShardResult, total: number): Promise<void> {
    const shown = redactShard(result, this.redact);
    // The log's tail is read before anything is printed, and the whole block goes out in one
    // write: another shard's lines can never land between a shard's end line and its excerpt.
    const tail = !SUCCESSFUL_SHARD_STATUSES.has(result.status) && result.logPath ? await logTail(result.logPath) : "";
    const block = [endLine(shown, total)];
    if (shown.leftovers.length > 0) {
      const left = shown.leftovers.filter((e) => e.leftGroup).length;
      block.push(
        `[${shown.index}/${total}] killed ${plural(shown.leftovers.length, "leftover process")} still running after ` +
          `the shard's tests ended` +
          `${left > 0 ? ` (${left} had left the process group)` : ""}: ${describe(shown.leftovers, (t) => t)}`,
      );
    }
    if (tail)
      block.push(
        tail
          .split("\n")
          .map((l) => `    | ${l}`)
          .join("\n"),
      );
    this.out.line(block.join("\n"));
    this.ending.delete(result.index);
    if (this.ending.size === 0) this.flushHeld();
  }

  /** Prints the START lines held behind end blocks (a shard's end can come without its exit: our own failure). */
  private flushHeld(): void {
    const held = this.held;
    this.held = [];
    for (const line of held) this.out.line(line);
  }

  onCancel(signal: "SIGINT" | "SIGTERM", running: number): void {
    this.out.line(
      `shardguard: ${signal} received: starting no new shard, stopping ${running} running (again to kill at once)`,
    );
  }

  onRunEnd(
    report: RunReport,
    paths: { junit: string; json: string; ctrf: string; html?: string } | null,
    filterMatchedNothing: boolean,
    runCopy: string | null = null,
    closing: readonly string[] = [],
  ): void {
    this.ending.clear();
    this.flushHeld();
    if (filterMatchedNothing)
      this.out.line("shardguard: the -t filter matched no test in any file: nothing was executed");
    for (const line of summaryLines(redactReport(report, this.redact), paths, runCopy, closing.map(this.redact)))
      this.out.line(line);
  }
}
