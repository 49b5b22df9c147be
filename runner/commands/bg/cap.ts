/**
 * The wall-clock cap of a local background run: long enough for the planned
 * work at the planned parallelism with room to spare, short enough that a
 * wedged run ends the same day. Rule (as the paid-tier tooling we replace):
 *
 *     cap = ceil(1.5 × planned serial seconds / jobs) + 20 min set-up, at most 4 h
 *
 * Planned serial seconds sum the recorded duration of every planned file,
 * from the run's timings files (`--timings`, plan/timings.ts); a file
 * without a record counts {@link UNRECORDED_FILE_MS}.
 */

/** Longest cap, seconds (4 h). */
export const MAX_CAP_SECONDS = 4 * 60 * 60;
/** Set-up allowance added to every computed cap, seconds (20 min). */
export const SETUP_SECONDS = 20 * 60;
/** Head-room factor over the planned work. */
export const CAP_FACTOR = 1.5;
/** Planned duration of a file with no recorded duration, ms (10 min: a long paid file). */
export const UNRECORDED_FILE_MS = 10 * 60 * 1000;

/** A computed cap. */
export interface BgRunCap {
  /** The cap, seconds. */
  seconds: number;
  /** Planned serial work, ms. */
  serialMs: number;
  /** True when the formula gave more than {@link MAX_CAP_SECONDS} (the plan may not finish in time). */
  exceeds: boolean;
  /** How many planned files had a recorded duration. */
  recorded: number;
  /** Where the seconds came from: "--cap" or "plan". */
  source: "--cap" | "plan";
}

/**
 * The cap for `files` (root-relative) run `jobs` at a time.
 *
 * @param timings recorded durations (ms) by root-relative path; files without one count {@link UNRECORDED_FILE_MS}
 */
export function computeCap(files: readonly string[], jobs: number, timings: ReadonlyMap<string, number>): BgRunCap {
  let serialMs = 0;
  let recorded = 0;
  for (const file of files) {
    const ms = timings.get(file) ?? timings.get(`./${file}`);
    if (ms !== undefined) recorded++;
    serialMs += ms ?? UNRECORDED_FILE_MS;
  }
  const computed = Math.ceil((CAP_FACTOR * serialMs) / Math.max(1, jobs) / 1000) + SETUP_SECONDS;
  return {
    seconds: Math.min(computed, MAX_CAP_SECONDS),
    serialMs,
    exceeds: computed > MAX_CAP_SECONDS,
    recorded,
    source: "plan",
  };
}
