/**
 * A test's duration from Bun's `end` `elapsed` and the runner's clock. Bun's `elapsed` is a wrapping signed 32-bit
 * ns count (docs/bun-behaviour.md, "Inspector test events"): receive times pick the wrap, Bun's value the precision.
 */

/** One wrap of Bun's 32-bit `elapsed`, ns. */
export const ELAPSED_WRAP_NS = 2 ** 32;

/** What Bun 1.3.13 sends for every test of 2^31 ns or more (docs/bun-behaviour.md): only "at least 2^31 ns". */
export const ELAPSED_SATURATED = -(2 ** 31);

/**
 * How far, ns, the unwrapped value may lie from the receive interval: within a quarter wrap the choice is
 * unambiguous; past it the clocks disagree more than reading delays explain, and the interval is the duration.
 */
export const ELAPSED_TOLERANCE_NS = ELAPSED_WRAP_NS / 4;

/**
 * The duration of a test's final attempt, ns. `bunElapsed`: Bun's value as sent; `receivedNs`: ns between the
 * receipt of `start` and `end` (undefined without a start). Bun's value unwrapped nearest `receivedNs` when within
 * {@link ELAPSED_TOLERANCE_NS}, else the larger of the two; without `receivedNs`, Bun's smallest reading.
 */
export function testDurationNs(bunElapsed: number, receivedNs: number | undefined): number {
  const received = receivedNs !== undefined && Number.isFinite(receivedNs) ? Math.max(0, receivedNs) : undefined;
  if (!Number.isFinite(bunElapsed)) return received ?? 0;
  if (bunElapsed === ELAPSED_SATURATED) return Math.max(received ?? 0, 2 ** 31);
  const int32 = Number.isInteger(bunElapsed) && bunElapsed >= -(2 ** 31) && bunElapsed < 2 ** 31;
  if (!int32) return bunElapsed >= 0 ? bunElapsed : (received ?? 0);
  const base = bunElapsed < 0 ? bunElapsed + ELAPSED_WRAP_NS : bunElapsed;
  if (received === undefined) return base;
  const wraps = Math.max(0, Math.round((received - base) / ELAPSED_WRAP_NS));
  const unwrapped = base + wraps * ELAPSED_WRAP_NS;
  if (Math.abs(unwrapped - received) <= ELAPSED_TOLERANCE_NS) return unwrapped;
  // The runner saw less time than Bun's smallest reading: its start was read late; Bun's value stands.
  return Math.max(received, base);
}
