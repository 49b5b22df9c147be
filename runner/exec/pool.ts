/**
 * A fixed-size job pool with cancellation and a queue that may grow.
 *
 * `jobs` workers take items in queue order; an item's work may add items
 * (re-dispatched files of a killed batched shard), which join the end of
 * the queue. Once `stopped()` is true no new item starts.
 *
 * An item holds one of the `jobs` slots until its work resolves or calls
 * `release()`: a shard gives its slot back as soon as its process group is
 * gone, so the next shard starts while the finished one's JUnit and marks
 * are read (engine/run.ts). Released work still counts as running for the end
 * of the pool and may still add items.
 */

/**
 * Runs `work` over `items`, and over every item `work` adds with `enqueue`,
 * with at most `jobs` holding a slot at once. Items are taken in order; a
 * worker with an empty queue waits while other items still run (they may
 * add more).
 *
 * @param work gets the item, `enqueue`, and `release` (idempotent) to free
 *   the item's slot before its work resolves
 * @returns for each item, in the order it was queued (the given ones first),
 *   its result or `undefined` when it never started; resolves once every
 *   started item's work has resolved
 * @param gate which pending item may start (exec/resource-gate.ts); without one, the next in order
 * @throws the first error a work function throws while it holds its slot;
 *   one thrown after its release, once every other item has finished
 */
export async function runPool<T, R>(
  items: readonly T[],
  jobs: number,
  work: (item: T, enqueue: (more: T) => void, release: () => void) => Promise<R>,
  stopped: () => boolean,
  gate?: PoolGate<T>,
): Promise<(R | undefined)[]> {
  const queue = [...items];
  const results: (R | undefined)[] = new Array(queue.length).fill(undefined);
  const started: Promise<void>[] = [];
  // Without a gate the next item is the one at `next`; with one, `pending`
  // holds the queue positions not started yet, in order (a gate may start a
  // later one first) and `waiting` their items, what the gate picks from.
  let next = 0;
  const pending: number[] = gate ? queue.map((_, i) => i) : [];
  const waiting: T[] = gate ? [...queue] : [];
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
    if (gate) {
      pending.push(queue.length - 1);
      waiting.push(more);
    }
    results.push(undefined);
    signal();
  };
  const worker = async () => {
    while (!stopped()) {
      const left = gate ? pending.length : queue.length - next;
      const at = left === 0 ? -1 : gate ? gate.pick(waiting) : 0;
      if (at < 0) {
        if (active === 0 && left === 0) return;
        // A gate admits the first pending item whenever nothing holds a resource.
        if (active === 0) throw new Error("the resource gate started no shard with none running");
        await changed;
        continue;
      }
      const index = gate ? pending.splice(at, 1)[0]! : next++;
      if (gate) waiting.splice(at, 1);
      active++;
      gate?.start(queue[index]!);
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        gate?.end(queue[index]!);
        // Idle workers may now start what waited for this item's resources.
        if (gate) signal();
      };
      let release: () => void = () => {};
      const released = new Promise<void>((r) => {
        release = () => {
          free();
          r();
        };
      });
      const done = work(queue[index]!, enqueue, release)
        .then((result) => {
          results[index] = result;
        })
        .finally(() => {
          free();
          active--;
          signal();
        });
      started.push(done);
      await Promise.race([released, done]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, worker));
  await Promise.all(started);
  return results;
}

/**
 * Decides which pending item may start (exec/resource-gate.ts). `pick` gets
 * the pending items in queue order and returns the index of the one to
 * start, or -1 for none now; `start` and `end` bracket each item's slot.
 */
export interface PoolGate<T> {
  pick(pending: readonly T[]): number;
  start(item: T): void;
  end(item: T): void;
}
