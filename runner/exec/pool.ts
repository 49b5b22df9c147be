/**
 * A fixed-size job pool with cancellation and a queue that may grow (a killed batched shard's files come
 * back). A slot is held until the work resolves or calls `release()`, so the next shard starts while the
 * last one's verdict is read; released work still counts as running.
 */

/**
 * Runs `work` over `items` and what it `enqueue`s, at most `jobs` holding a slot; `gate` picks the next
 * (default: in order). Resolves to each item's result in queue order (`undefined`: never started).
 * Throws the first error of work holding its slot; one after its release, once all others finished.
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
  // With a gate, `pending` holds the queue positions not started yet, since it may start a later one first.
  let next = 0;
  const pending: number[] = gate ? queue.map((_, i) => i) : [];
  const waiting: T[] = gate ? [...queue] : [];
  let active = 0;
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

/** Which pending item may start: `pick` returns an index in queue order or -1; `start` and `end` bracket a slot. */
export interface PoolGate<T> {
  pick(pending: readonly T[]): number;
  start(item: T): void;
  end(item: T): void;
}
