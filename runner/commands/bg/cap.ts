/**
 * The wall-clock cap of a local background run: room for the planned work, short enough that a wedged run ends
 * the same day (docs/background.md, "The cap"): ceil(CAP_FACTOR × serial / jobs) + SETUP_SECONDS, capped.
 */

/** Longest cap, seconds. */
export const MAX_CAP_SECONDS = 4 * 60 * 60;
/** Set-up allowance added to every computed cap, seconds. */
export const SETUP_SECONDS = 20 * 60;
/** Head-room factor over the planned work. */
export const CAP_FACTOR = 1.5;
/** Planned duration of a file with no recorded duration, ms: a long paid file. */
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
