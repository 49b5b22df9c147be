/**
 * Per-file durations in Bun's own timings format, for duration-aware
 * scheduling (`--timings`, `--update-timings`).
 *
 * The format is the one `bun test --timings F --update-timings` reads and
 * writes (Bun 1.4.4): `{"version": 1, "files": {"<path>": <ms>}}`, paths
 * relative to the working directory of `bun test`. Shard children run in the
 * root, so shardguard's keys are relative to the root, with forward slashes;
 * a file written by `bun test --update-timings` run from the root is
 * interchangeable with ours.
 */
import { existsSync } from "node:fs";
import { readRegularTextSync } from "../util/regular-file.ts";
import { z } from "zod";
import { ConfigError } from "../config/settings-schema.ts";
import type { PlannedShard } from "./plan.ts";

/** Bun's timings file: version 1, file path → duration in ms. Other keys are kept out of our reading. */
export const TimingsFileSchema = z.object({
  version: z.literal(1),
  files: z.record(z.string(), z.number().nonnegative().finite()),
});
export type TimingsFile = z.infer<typeof TimingsFileSchema>;

/** Durations read from timings files. */
export interface Timings {
  /** Path relative to the root → ms; later files win. */
  durations: Map<string, number>;
  /** Given files that do not exist (the first run of a suite); a warning, not an error. */
  missing: string[];
}

/**
 * Reads and merges timings files (later ones win for the same path).
 *
 * @param files absolute paths
 * @throws ConfigError when a file exists but is not valid JSON in Bun's
 *   timings format (a file given on purpose that we cannot read must not be
 *   silently ignored), or cannot be read
 */
export function readTimings(files: readonly string[]): Timings {
  const timings: Timings = { durations: new Map(), missing: [] };
  for (const file of files) {
    const parsed = readTimingsFile(file, "--timings");
    if (!parsed) {
      timings.missing.push(file);
      continue;
    }
    for (const [rel, ms] of Object.entries(parsed.files)) timings.durations.set(rel, ms);
  }
  return timings;
}

/**
 * One timings file, or null when it does not exist.
 *
 * @param what the setting named in the error line (`--timings`, `--update-timings`)
 * @throws ConfigError when it exists but is unreadable or malformed
 */
export function readTimingsFile(file: string, what: string): TimingsFile | null {
  if (!existsSync(file)) return null;
  let text: string;
  try {
    text = readRegularTextSync(file);
  } catch (error) {
    throw new ConfigError(
      `invalid ${what} ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError(
      `invalid ${what} ${JSON.stringify(file)}: not JSON; expected Bun's timings format {"version":1,"files":{"<path>":<ms>}}`,
    );
  }
  const result = TimingsFileSchema.safeParse(json);
  if (!result.success) {
    throw new ConfigError(
      `invalid ${what} ${JSON.stringify(file)}: expected Bun's timings format {"version":1,"files":{"<path>":<ms>}}`,
    );
  }
  return result.data;
}

/**
 * Orders shards longest first (LPT, longest-processing-time: the classic
 * greedy rule for makespan on identical machines, within 4/3 of optimal).
 * A shard's estimate is the sum of its files' recorded durations; a file
 * with no record counts as the mean of the recorded ones. Ties, and every
 * shard when nothing is recorded, keep plan order. Returns a new array.
 */
export function orderByTimings(
  shards: readonly PlannedShard[],
  durations: ReadonlyMap<string, number>,
): PlannedShard[] {
  const known = shards.flatMap((s) => s.files).filter((f) => durations.has(f));
  if (known.length === 0) return [...shards];
  const mean = known.reduce((sum, f) => sum + durations.get(f)!, 0) / known.length;
  const estimate = (s: PlannedShard) => s.files.reduce((sum, f) => sum + (durations.get(f) ?? mean), 0);
  return shards
    .map((shard) => ({ shard, ms: estimate(shard) }))
    .sort((a, b) => b.ms - a.ms || a.shard.index - b.shard.index)
    .map((e) => e.shard);
}

/**
 * Renders a timings file: the entries already in `previous` (if any) with
 * `measured` merged over them, keys sorted so the file diffs well.
 */
export function renderTimings(previous: TimingsFile | null, measured: ReadonlyMap<string, number>): string {
  const files: Record<string, number> = { ...(previous?.files ?? {}) };
  for (const [rel, ms] of measured) files[rel] = Math.round(ms);
  const sorted = Object.fromEntries(
    Object.keys(files)
      .sort()
      .map((k) => [k, files[k]!]),
  );
  return `${JSON.stringify({ version: 1, files: sorted }, null, 2)}\n`;
}
