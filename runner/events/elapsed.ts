/**
 * A test's duration from Bun's `TestReporter.end` `elapsed` and the
 * runner's own clock. Bun 1.4.4 sends `elapsed` in nanoseconds as a signed
 * 32-bit value: it wraps every 2^32 ns (about 4.29 s), so 2.3 s arrives as
 * -1993799111 and 5 s as 705032704 (measured, docs/bun-behaviour.md). The
 * runner's receive times of the test's `start` and `end` cannot wrap; they
 * pick the wrap count, and Bun's value keeps its precision.
 */

/** One wrap of Bun's 32-bit `elapsed`, ns. */
export const ELAPSED_WRAP_NS = 2 ** 32;

/**
 * What Bun 1.3.13 sends for every test of 2^31 ns (about 2.15 s) or more:
 * -2^31, its out-of-range conversion, not a wrapped reading (2.3 s arrived
 * as -2147483648; 1.3.14 sent -1994319009 for the same test; measured,
 * docs/bun-behaviour.md). It says only "at least 2^31 ns".
 */
export const ELAPSED_SATURATED = -(2 ** 31);

/**
 * How far, ns, the corrected value may lie from the runner's receive
 * interval and still be taken: a quarter of a wrap (about 1.07 s). The
 * next candidate is then at least three quarters away, so the choice is
 * unambiguous; past it the runner's clocks disagree by more than reading
 * delays explain, and the receive interval is the duration.
 */
export const ELAPSED_TOLERANCE_NS = ELAPSED_WRAP_NS / 4;

/**
 * The duration of a test's final attempt, ns.
 *
 * @param bunElapsed Bun's `elapsed` as sent (ns; any number, possibly wrapped)
 * @param receivedNs ns between the runner's receipt of the attempt's
 *   `start` and of its `end`; undefined when there was no `start` (skip,
 *   todo, a lost start) or no clock
 * @returns Bun's value unwrapped by the number of wraps that brings it
 *   nearest `receivedNs` when that lies within {@link ELAPSED_TOLERANCE_NS};
 *   else the larger of `receivedNs` and Bun's smallest reading; without `receivedNs`, the smallest non-negative value
 *   Bun's value can stand for. A value outside the 32-bit range is taken
 *   as it is (a Bun that does not wrap) when it is non-negative;
 *   {@link ELAPSED_SATURATED} gives the larger of `receivedNs` and 2^31 ns.
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
