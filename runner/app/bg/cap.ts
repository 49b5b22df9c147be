/**
 * The wall-clock cap of a local background run: long enough for the planned
 * work at the planned parallelism with room to spare, short enough that a
 * wedged run ends the same day. Rule (as the paid-tier tooling we replace):
 *
 *     cap = ceil(1.5 × planned serial seconds / jobs) + 20 min set-up, at most 4 h
 *
 * Planned serial seconds sum the recorded duration of every planned file,
 * from a Bun timings file (`{"version":1,"files":{"<root-relative path>":ms}}`)
 * when one is given; a file without a record counts {@link UNRECORDED_FILE_MS}.
 */
import { readFileSync } from "node:fs";
import { ConfigError } from "../../config/schema.ts";

/** Longest cap, seconds (4 h). */
export const MAX_CAP_SECONDS = 4 * 60 * 60;
/** Set-up allowance added to every computed cap, seconds (20 min). */
export const SETUP_SECONDS = 20 * 60;
/** Head-room factor over the planned work. */
export const CAP_FACTOR = 1.5;
/** Planned duration of a file with no recorded duration, ms (10 min: a long paid file). */
export const UNRECORDED_FILE_MS = 10 * 60 * 1000;

/** A computed cap. */
export interface Cap {
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
 * Reads a Bun timings file into root-relative path → ms.
 *
 * @returns an empty map when the file does not exist (a suite's first run)
 * @throws ConfigError (exit 2) when the file is unreadable or not in that shape
 */
export function readTimings(file: string): Map<string, number> {
  let parsed: unknown;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    // A suite's first run has no timings yet: plan with the per-file default, as `run` orders by plan.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw new ConfigError(`cannot read timings file ${file}: ${(error as Error).message}`);
  }
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`cannot read timings file ${file}: ${(error as Error).message}; expected {"version":1,"files":{"<path>":ms}}`);
  }
  const files = (parsed as { files?: unknown })?.files;
  if (typeof files !== "object" || files === null || Array.isArray(files)) {
    throw new ConfigError(`timings file ${file} has no "files" object; expected {"version":1,"files":{"<path>":ms}}`);
  }
  const out = new Map<string, number>();
  for (const [name, ms] of Object.entries(files)) if (typeof ms === "number" && Number.isFinite(ms) && ms >= 0) out.set(name, ms);
  return out;
}

/**
 * The cap for `files` (root-relative) run `jobs` at a time.
 *
 * @param timings recorded durations (ms) by root-relative path; files without one count {@link UNRECORDED_FILE_MS}
 */
export function computeCap(files: readonly string[], jobs: number, timings: ReadonlyMap<string, number>): Cap {
  let serialMs = 0;
  let recorded = 0;
  for (const file of files) {
    const ms = timings.get(file) ?? timings.get(`./${file}`);
    if (ms !== undefined) recorded++;
    serialMs += ms ?? UNRECORDED_FILE_MS;
  }
  const computed = Math.ceil((CAP_FACTOR * serialMs) / Math.max(1, jobs) / 1000) + SETUP_SECONDS;
  return { seconds: Math.min(computed, MAX_CAP_SECONDS), serialMs, exceeds: computed > MAX_CAP_SECONDS, recorded, source: "plan" };
}
