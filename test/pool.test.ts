/**
 * The job pool: at most `jobs` at once, in order, with a queue that may grow
 * while it runs (re-dispatched files of a killed batched shard).
 */
import { describe, expect, test } from "bun:test";
import { runPool } from "../runner/exec/pool.ts";

const tick = () => new Promise<void>((r) => setImmediate(r));

describe("runPool", () => {
  test("items added by work run after the given ones, and a worker that found the queue empty still takes them", async () => {
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    const results = await runPool(
      ["a", "b"],
      3,
      async (item, enqueue) => {
        running++;
        peak = Math.max(peak, running);
        order.push(item);
        // "a" ends later than "b" and adds two items after the idle workers have waited.
        for (let i = 0; i < (item === "a" ? 5 : 1); i++) await tick();
        if (item === "a") {
          enqueue("a1");
          enqueue("a2");
        }
        running--;
        return item.toUpperCase();
      },
      () => false,
    );
    expect(results).toEqual(["A", "B", "A1", "A2"]);
    expect(order).toEqual(["a", "b", "a1", "a2"]);
    expect(peak).toBeLessThanOrEqual(3);
  });

  test("never more than jobs at once; nothing starts once stopped, and those items stay undefined", async () => {
    let running = 0;
    let peak = 0;
    let started = 0;
    const results = await runPool(
      [1, 2, 3, 4, 5],
      2,
      async (n) => {
        running++;
        started++;
        peak = Math.max(peak, running);
        await tick();
        running--;
        return n * 10;
      },
      () => started >= 3,
    );
    expect(peak).toBe(2);
    expect(results.filter((r) => r !== undefined).length).toBe(3);
    expect(results.slice(3)).toEqual([undefined, undefined]);
  });
});
