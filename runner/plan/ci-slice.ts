/**
 * `--shard auto`: the slice from the CI's own parallelism variables (docs/sharding.md, "--shard auto"). Pure: the
 * environment comes in as a record.
 */
import { ConfigError } from "../config/settings-schema.ts";

/** A CI's parallel-job variables: the index (base 0 or 1, as the CI counts) and the total. */
interface CiSliceVars {
  ci: string;
  index: string;
  total: string;
  /** What the CI's index of the first job is. */
  base: 0 | 1;
}

/**
 * The CIs `--shard auto` reads, as each documents its variables: GitLab's `parallel:` (CI_NODE_INDEX from 1),
 * Buildkite's `parallelism:` (BUILDKITE_PARALLEL_JOB from 0), CircleCI's `parallelism:` (CIRCLE_NODE_INDEX from 0).
 */
export const CI_SLICE_VARS: readonly CiSliceVars[] = [
  { ci: "GitLab", index: "CI_NODE_INDEX", total: "CI_NODE_TOTAL", base: 1 },
  { ci: "Buildkite", index: "BUILDKITE_PARALLEL_JOB", total: "BUILDKITE_PARALLEL_JOB_COUNT", base: 0 },
  { ci: "CircleCI", index: "CIRCLE_NODE_INDEX", total: "CIRCLE_NODE_TOTAL", base: 0 },
];

/**
 * The 1-based slice `--shard auto` means in `env`.
 * @param maxSlices the largest total accepted (plan/slice.ts MAX_SLICES)
 * @returns `{ index, count }`, index 1-based whatever the CI's base
 * @throws ConfigError (one line) when no CI's variables are set, when one of a pair is missing, when a value is
 *   not a whole number in range, or when two CIs' variables are set
 */
export function sliceFromCiEnv(
  env: Record<string, string | undefined>,
  maxSlices: number,
): { index: number; count: number } {
  const present = CI_SLICE_VARS.filter((v) => env[v.index] !== undefined || env[v.total] !== undefined);
  if (present.length === 0) {
    const read = CI_SLICE_VARS.map((v) => `${v.ci} ${v.index}/${v.total}`).join(", ");
    throw new ConfigError(
      `--shard auto: no CI parallel-job variables are set; it reads ${read}. GitHub Actions sets none: ` +
        "give each matrix job --shard I/N instead (docs/sharding.md)",
    );
  }
  if (present.length > 1) {
    throw new ConfigError(
      `--shard auto: variables of ${present.map((v) => v.ci).join(" and ")} are both set; give --shard I/N`,
    );
  }
  const v = present[0]!;
  const rawIndex = env[v.index];
  const rawTotal = env[v.total];
  if (rawIndex === undefined || rawTotal === undefined) {
    const [set, unset] = rawIndex === undefined ? [v.total, v.index] : [v.index, v.total];
    throw new ConfigError(`--shard auto: ${set} is set but ${unset} is not (${v.ci} sets both for parallel jobs)`);
  }
  const number = (raw: string) => (/^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN);
  const index = number(rawIndex) - v.base + 1;
  const count = number(rawTotal);
  if (!(index >= 1 && count >= 1 && index <= count && count <= maxSlices)) {
    throw new ConfigError(
      `--shard auto: ${v.index}=${JSON.stringify(rawIndex)} and ${v.total}=${JSON.stringify(rawTotal)} are not a ` +
        `slice: ${v.ci} counts ${v.index} from ${v.base}, expected ${v.base} <= ${v.index} <= ` +
        `${v.total}${v.base === 0 ? " - 1" : ""} and 1 <= ${v.total} <= ${maxSlices}`,
    );
  }
  return { index, count };
}
