/**
 * Per-file durations in Bun's own timings format (docs/configuration.md, "Timings"): keys relative to the root with
 * forward slashes, so a file `bun test --update-timings` wrote from the root is interchangeable with ours.
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

/** Reads and merges timings files (absolute paths; later ones win).
 * @throws ConfigError for a file that exists but is unreadable or not Bun's format: one given on purpose */
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

/** One timings file, or null when it does not exist; `what` is the flag named in the error line.
 * @throws ConfigError when it exists but is unreadable or malformed */
export function readTimingsFile(file: string, what: string): TimingsFile | null {
  if (!existsSync(file)) return null;
  let text: string;
  try {
    text = readRegularTextSync(file);
  } catch (error) {
    throw new ConfigError(
      `invalid ${what} ${JSON.stringify(file)}: cannot read it ` +
        `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError(
      `invalid ${what} ${JSON.stringify(file)}: not JSON; expected Bun's timings format ` +
        `{"version":1,"files":{"<path>":<ms>}}`,
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

/** Shards longest first (LPT) by their files' recorded durations, unrecorded at the mean; ties keep plan order. */
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

/** A timings file: `measured` merged over `previous`, keys sorted so the file diffs well. */
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
