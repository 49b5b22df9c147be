/**
 * A fixed-size job pool with cancellation and a queue that may grow.
 *
 * `jobs` workers take items in queue order; an item's work may add items
 * (re-dispatched files of a killed batched shard), which join the end of
 * the queue. Once `stopped()` is true no new item starts.
 */

/**
 * Runs `work` over `items`, and over every item `work` adds with `enqueue`,
 * with at most `jobs` at once. Items are taken in order; a worker with an
 * empty queue waits while other items still run (they may add more).
 *
 * @returns for each item, in the order it was queued (the given ones first),
 *   its result or `undefined` when it never started
 */
export async function runPool<T, R>(
  items: readonly T[],
  jobs: number,
  work: (item: T, enqueue: (more: T) => void) => Promise<R>,
  stopped: () => boolean,
): Promise<(R | undefined)[]> {
  const queue = [...items];
  const results: (R | undefined)[] = new Array(queue.length).fill(undefined);
  let next = 0;
  let active = 0;
  // Wakes idle workers when an item is queued or a running one ends.
  let wake: () => void = () => {};
  let changed = new Promise<void>((r) => (wake = r));
  const signal = () => {
    wake();
    changed = new Promise<void>((r) => (wake = r));
  };
  const enqueue = (more: T) => {
    queue.push(more);
    results.push(undefined);
    signal();
  };
  const worker = async () => {
    while (!stopped()) {
      if (next >= queue.length) {
        if (active === 0) return;
        await changed;
        continue;
      }
      const index = next++;
      active++;
      try {
        results[index] = await work(queue[index]!, enqueue);
      } finally {
        active--;
        signal();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, worker));
  return results;
}
