/**
 * A shard's eval directory read as its cost source (docs/cost.md, "Adapters"): gstack's `_partial-e2e.json`
 * while the shard runs, its final result files at the end, only files written since the attempt began.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { roundUsd } from "../cost/ledger.ts";
import {
  GSTACK_PARTIAL_FILE,
  readEvalResult,
  type EvalEntry,
  type EvalSpend,
  type SeenEvalEntry,
} from "../cost/gstack-eval.ts";

/** The fastest the live spend re-reads a changed partial file, ms (a budget check asks every 250 ms). */
export const EVAL_POLL_MS = 1_000;
/** A result file larger than this is not read (transcripts can be large): its spend is then unknown. */
const MAX_EVAL_FILE_BYTES = 64 * 1024 * 1024;

/** The runner's side of one attempt's eval directory; never throws. */
export class EvalDirReader {
  private seen: SeenEvalEntry[] = [];
  private lastStamp = "";
  private lastReadMs = Number.NEGATIVE_INFINITY;
  private readonly problems = new Set<string>();

  /** @param sinceMs the attempt's start (epoch ms): older files are an earlier run's */
  constructor(
    readonly dir: string,
    private readonly sinceMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Re-reads the partial file when it changed; without `force`, at most every {@link EVAL_POLL_MS}. New entries
   * are charged to `inFlight()` at that moment (the collector writes it as a test ends).
   */
  poll(inFlight: () => string | null, force = false): void {
    if (!force && this.now() - this.lastReadMs < EVAL_POLL_MS) return;
    this.lastReadMs = this.now();
    const file = path.join(this.dir, GSTACK_PARTIAL_FILE);
    const stamp = this.stampOf(file);
    if (stamp === null || stamp === this.lastStamp) return;
    this.lastStamp = stamp;
    const entries = this.read(file, false);
    // A failed read is tried again at the next change or the end, where it is named.
    if (entries === null) {
      this.lastStamp = "";
      return;
    }
    const name = entries.length > this.seen.length ? inFlight() : null;
    for (let i = this.seen.length; i < entries.length; i++) this.seen.push({ entry: entries[i]!, inFlight: name });
  }

  /** Dollars of the entries seen so far. */
  spentUsd(): number {
    return roundUsd(this.seen.reduce((sum, s) => sum + s.entry.usd, 0));
  }

  /**
   * The attempt's entries: those of the final result files written since it began, else (a killed shard,
   * whose collector never finalized) the partial file's. Entries keep the test in flight they were seen under.
   */
  finish(inFlight: () => string | null): EvalSpend {
    this.poll(inFlight, true);
    const finals = this.finalFiles();
    let entries = this.seen;
    if (finals.length > 0) {
      const byName = new Map<string, SeenEvalEntry[]>();
      for (const s of this.seen) byName.set(s.entry.name, [...(byName.get(s.entry.name) ?? []), s]);
      entries = finals
        .flatMap((f) => this.read(f) ?? [])
        .map((entry) => ({
          entry,
          inFlight: byName.get(entry.name)?.shift()?.inFlight ?? null,
        }));
    }
    return { adapter: "gstack-eval", entries, problems: [...this.problems] };
  }

  /** Final (not partial) result files of this attempt, oldest first. */
  private finalFiles(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names
      .filter((n) => n.endsWith(".json") && !n.startsWith("_partial"))
      .map((n) => path.join(this.dir, n))
      .filter((f) => this.stampOf(f) !== null)
      .sort();
  }

  /** "mtime:size" of a regular file written since the attempt began; null otherwise. */
  private stampOf(file: string): string | null {
    try {
      const s = statSync(file);
      return s.isFile() && s.mtimeMs >= this.sinceMs ? `${s.mtimeMs}:${s.size}` : null;
    } catch {
      return null;
    }
  }

  private read(file: string, note = true): EvalEntry[] | null {
    const label = path.basename(file);
    try {
      if (statSync(file).size > MAX_EVAL_FILE_BYTES) {
        this.problems.add(`${label}: larger than ${MAX_EVAL_FILE_BYTES / 1024 / 1024} MiB, not read`);
        return null;
      }
      const reading = readEvalResult(readFileSync(file, "utf8"));
      if (reading.ok) return reading.entries;
      if (note) this.problems.add(`${label}: ${reading.problem}`);
    } catch (error) {
      if (note) this.problems.add(`${label}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}`);
    }
    return null;
  }
}
