/** Run ids: the name of a run's directory under OUT/runs and its reports' `runId`. */
import { randomHex } from "../util/random.ts";
import { BG_RUN_ID_ENV } from "./host.ts";

/** Makes a sortable, unique run id: `20261130T154226Z-1a2b3c`. */
export function newRunId(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")}-${randomHex(3)}`;
}

/**
 * The run's id: a bg run's own (`<id>-<label>`, {@link BG_RUN_ID_ENV}) when it is well formed, else a new one.
 * @param env the run's environment (the host's)
 */
export function runIdFrom(env: Record<string, string | undefined>): string {
  const given = env[BG_RUN_ID_ENV];
  return given && /^\d{8}T\d{6}Z-[0-9a-f]+-[A-Za-z0-9._-]+$/.test(given) ? given : newRunId();
}
