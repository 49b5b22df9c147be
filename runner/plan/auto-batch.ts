/** `--files-per-shard auto` batches (docs/sharding.md, "Batches of many small files"). Pure: no file is read. */

/** The constants of the batch rule, in ms of recorded (or assumed) file duration. */
export const AUTO_BATCH = {
  /** Batches per job under `--isolate`, so the pool stays busy to the end (longest first). */
  batchesPerJob: 4,
  /**
   * Batches per job when a batch's files share one process (the default): each batch loads the suite's modules once,
   * so fewer, larger batches win (elysia, 130 files, jobs 2: 2 batches 4.4 s, 4 batches 5.2 s, 8 batches 7.4 s).
   */
  sharedBatchesPerJob: 1,
  /** Least work per batch: below it a shard's start-up dominates (bench/README.md, "Where the time goes"). */
  minBatchMs: 500,
  /** Most work per `--isolate` batch: caps what one wedged file's re-dispatch and one timeout cover. */
  maxBatchMs: 5000,
  /** Most work per shared batch: its module loading is paid once, so the cap is wider (docs/sharding.md). */
  maxSharedBatchMs: 30_000,
  /** Cost of a file with no recorded duration when no file has one (with records: their median). */
  defaultFileMs: 50,
  /**
   * Most work per batch as a share of the shard timeout: the timeout covers the whole batch, so a batch of passing
   * files sized near it is killed once load slows it down (its test in flight would read timed-out).
   */
  timeoutShare: 0.25,
  /** Most files in one batch: the event channel's per-file barriers stop past 10,000. */
  maxFiles: 10_000,
} as const;

/** Inputs of {@link autoBatches}. */
export interface AutoBatchInputs {
  /** Recorded per-file durations (ms), keyed like the plan's files (root-relative, forward slashes). */
  durations: ReadonlyMap<string, number>;
  jobs: number;
  /** Each batch runs with Bun's `--isolate` (a fresh global per file); else its files share one process. */
  isolated?: boolean;
  /** The shard timeout, ms: a batch's work is at most {@link AUTO_BATCH.timeoutShare} of it. */
  timeoutMs?: number;
}

/** What {@link autoBatches} decided, for `list` and the docs' worked examples. */
export interface AutoBatchPlan {
  /** Groups of files, each one shard, in plan order of their first file; each group in plan order. */
  groups: string[][];
  targetMs: number;
  /** Files alone in their shard because their recorded duration is at least {@link targetMs}. */
  alone: string[];
}

/**
 * Groups `files` (plan order) into batches by the rule of docs/sharding.md, "Batches of many small files": about
 * `jobs` batches sharing a process each (capped at {@link AUTO_BATCH.maxSharedBatchMs} of work), or under `isolated`
 * `jobs` × 4 of at most {@link AUTO_BATCH.maxBatchMs}; both at least {@link AUTO_BATCH.minBatchMs}.
 */
export function autoBatches(files: readonly string[], inputs: AutoBatchInputs): AutoBatchPlan {
  const recorded = files.filter((f) => inputs.durations.has(f)).map((f) => inputs.durations.get(f)!);
  const fallback = recorded.length > 0 ? median(recorded) : AUTO_BATCH.defaultFileMs;
  const cost = (f: string) => inputs.durations.get(f) ?? fallback;
  const total = files.reduce((sum, f) => sum + cost(f), 0);
  const jobs = Math.max(1, Math.floor(inputs.jobs));
  const [perJob, maxMs] = inputs.isolated
    ? [AUTO_BATCH.batchesPerJob, AUTO_BATCH.maxBatchMs]
    : [AUTO_BATCH.sharedBatchesPerJob, AUTO_BATCH.maxSharedBatchMs];
  const capMs = Math.min(maxMs, (inputs.timeoutMs ?? Number.POSITIVE_INFINITY) * AUTO_BATCH.timeoutShare);
  const targetMs = Math.min(capMs, Math.max(AUTO_BATCH.minBatchMs, total / (jobs * perJob)));
  const position = new Map(files.map((f, i) => [f, i]));
  const alone = files.filter((f) => inputs.durations.has(f) && inputs.durations.get(f)! >= targetMs);
  const isAlone = new Set(alone);
  const rest = files.filter((f) => !isAlone.has(f));
  const restMs = rest.reduce((sum, f) => sum + cost(f), 0);
  const count = Math.min(
    rest.length,
    // The epsilon keeps a total that divides evenly from one batch more by rounding.
    Math.max(Math.ceil(restMs / targetMs - 1e-9), Math.ceil(rest.length / AUTO_BATCH.maxFiles)),
  );
  let bins: string[][];
  if (recorded.length === 0) {
    bins = Array.from({ length: count }, (_, i) =>
      rest.slice(Math.floor((i * rest.length) / count), Math.floor(((i + 1) * rest.length) / count)),
    );
  } else {
    bins = Array.from({ length: count }, () => []);
    const load = new Array<number>(count).fill(0);
    const longestFirst = [...rest].sort((a, b) => cost(b) - cost(a) || position.get(a)! - position.get(b)!);
    for (const f of longestFirst) {
      let best = -1;
      for (let i = 0; i < count; i++) {
        if (bins[i]!.length >= AUTO_BATCH.maxFiles) continue;
        if (best < 0 || load[i]! < load[best]!) best = i;
      }
      bins[best]!.push(f);
      load[best]! += cost(f);
    }
    for (const bin of bins) bin.sort((a, b) => position.get(a)! - position.get(b)!);
  }
  const groups = [...alone.map((f) => [f]), ...bins.filter((b) => b.length > 0)];
  groups.sort((a, b) => position.get(a[0]!)! - position.get(b[0]!)!);
  return { groups, targetMs, alone };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
