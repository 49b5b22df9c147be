/**
 * A fixed-size job pool with cancellation.
 *
 * `jobs` workers take items in plan order; once `stopped()` is true no new
 * item starts, and items never taken are reported back as not started.
 */

/**
 * Runs `work` over `items` with at most `jobs` at once.
 *
 * @returns for each item, in input order, its result or `undefined` when it never started
 */
export async function runPool<T, R>(
  items: readonly T[],
  jobs: number,
  work: (item: T) => Promise<R>,
  stopped: () => boolean,
): Promise<(R | undefined)[]> {
  const results: (R | undefined)[] = new Array(items.length).fill(undefined);
  let next = 0;
  const worker = async () => {
    while (!stopped()) {
      const index = next++;
      if (index >= items.length) return;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, worker));
  return results;
}
