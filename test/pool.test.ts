/**
 * The job pool: at most `jobs` at once, in order, with a queue that may grow
 * while it runs (re-dispatched files of a killed batched shard), and slots
 * released before the work ends (a shard whose process group is gone).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { runPool } from "../runner/exec/pool.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const tick = () => new Promise<void>((r) => setImmediate(r));

describe("runPool", () => {
  test(
    "items added by work run after the given ones, and " + "a worker that found the queue empty still takes them",
    async () => {
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
    },
  );

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

  test("a released slot starts the next item while the released work goes on; the pool ends after it", async () => {
    const log: string[] = [];
    let holding = 0;
    let peakHolding = 0;
    const results = await runPool(
      ["a", "b", "c"],
      1,
      async (item, enqueue, release) => {
        holding++;
        peakHolding = Math.max(peakHolding, holding);
        log.push(`start ${item}`);
        await tick();
        holding--;
        release();
        release(); // idempotent
        for (let i = 0; i < 4; i++) await tick();
        if (item === "a") enqueue("a1");
        log.push(`end ${item}`);
        return item;
      },
      () => false,
    );
    expect(results).toEqual(["a", "b", "c", "a1"]);
    // "b" started while "a" was still finishing; the item "a" added after its release still ran.
    expect(log.indexOf("start b")).toBeLessThan(log.indexOf("end a"));
    expect(log.at(-1)).toBe("end a1");
    expect(peakHolding).toBe(1);
  });
});

describe("shardguard run --jobs", () => {
  test("never more shards running tests at once than --jobs, with slots handed on at each exit", async () => {
    // Each test records when its process ran; with --jobs 1 no two may overlap.
    const file = (name: string) =>
      'import { test } from "bun:test";\nimport { appendFileSync } from "node:fs";\n' +
      `test("${name}", async () => {\n` +
      `  appendFileSync(process.env.SPANS!, \`start ${name} \${Date.now()}\\n\`);\n` +
      "  await Bun.sleep(150);\n" +
      `  appendFileSync(process.env.SPANS!, \`end ${name} \${Date.now()}\\n\`);\n` +
      "});\n";
    const dir = makeSuite({
      "a.test.ts": file("a"),
      "b.test.ts": file("b"),
      "c.test.ts": file("c"),
      "d.test.ts": file("d"),
    });
    const spans = path.join(dir, "spans.txt");
    const run = await runCli(["run", "--root", dir, "--jobs", "1"], { env: { SPANS: spans } });
    expect(run.code).toBe(0);
    expect(readReport(dir).shards.map((s) => s.status)).toEqual(["passed", "passed", "passed", "passed"]);
    const lines = readFileSync(spans, "utf8").trim().split("\n");
    expect(lines.map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual([
      "start a",
      "end a",
      "start b",
      "end b",
      "start c",
      "end c",
      "start d",
      "end d",
    ]);
  });
});
