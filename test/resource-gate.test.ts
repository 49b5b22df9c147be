/**
 * The resource gate (exec/resource-gate.ts) on a fake clock, the pool with
 * a gate, and the plan side (plan/resources.ts): which shard may start,
 * reservations against starvation, the drain for an exclusive shard, waits
 * recorded, the simulated makespan, exclusive files never batched.
 */
import { describe, expect, test } from "bun:test";
import {
  describeWait,
  ResourceGate,
  simulateMakespan,
  DRAIN,
  EXCLUSIVE_RUNNING,
} from "../runner/exec/resource-gate.ts";
import { runPool } from "../runner/exec/pool.ts";
import { groupIntoShards } from "../runner/plan/plan.ts";
import { exclusiveLast, resourcePlan, type ShardNeeds } from "../runner/plan/resources.ts";

type Item = { name: string; locks?: string[]; exclusive?: boolean };
const needs = (i: Item): ShardNeeds => ({ locks: i.locks ?? [], exclusive: i.exclusive ?? false });
const gateOf = (capacity: Record<string, number> = {}, now = () => 0) =>
  new ResourceGate<Item>(needs, new Map(Object.entries(capacity)), now);

describe("ResourceGate.pick", () => {
  test("a shard whose resource is held is passed over; the next one without it starts", () => {
    const gate = gateOf();
    const a = { name: "a", locks: ["db"] };
    const b = { name: "b", locks: ["db"] };
    const c = { name: "c" };
    gate.start(a);
    expect(gate.pick([b, c])).toBe(1);
    gate.end(a);
    expect(gate.pick([b, c])).toBe(0);
  });

  test("capacity N lets N holders run at once, not N+1", () => {
    const gate = gateOf({ quota: 2 });
    const items = [1, 2, 3].map((n) => ({ name: `q${n}`, locks: ["quota"] }));
    expect(gate.pick(items)).toBe(0);
    gate.start(items[0]!);
    expect(gate.pick(items.slice(1))).toBe(0);
    gate.start(items[1]!);
    expect(gate.pick(items.slice(2))).toBe(-1);
    gate.end(items[0]!);
    expect(gate.pick(items.slice(2))).toBe(0);
  });

  test(
    "a waiting shard reserves what it waits for: a later shard needing one of them may not take it (no " +
      "starvation)",
    () => {
      const gate = gateOf();
      const holdsB = { name: "holdsB", locks: ["b"] };
      const wantsAB = { name: "wantsAB", locks: ["a", "b"] };
      const wantsA = { name: "wantsA", locks: ["a"] };
      const free = { name: "free" };
      gate.start(holdsB);
      // "a" is free, but wantsAB (earlier) waits for it together with "b".
      expect(gate.pick([wantsAB, wantsA, free])).toBe(2);
      gate.end(holdsB);
      expect(gate.pick([wantsAB, wantsA])).toBe(0);
    },
  );

  test("an exclusive shard that is next waits for the drain and nothing new starts; then it runs alone", () => {
    const gate = gateOf();
    const running = { name: "r" };
    const ex = { name: "ex", exclusive: true };
    const later = { name: "later" };
    gate.start(running);
    expect(gate.pick([ex, later])).toBe(-1);
    gate.end(running);
    expect(gate.pick([ex, later])).toBe(0);
    gate.start(ex);
    expect(gate.pick([later])).toBe(-1);
    gate.end(ex);
    expect(gate.pick([later])).toBe(0);
  });

  test("an exclusive shard later in the queue does not stop earlier ones from starting", () => {
    const gate = gateOf();
    gate.start({ name: "r" });
    expect(gate.pick([{ name: "x" }, { name: "ex", exclusive: true }])).toBe(0);
  });

  test("with nothing running the first pending shard always starts (no deadlock by construction)", () => {
    const gate = gateOf({ a: 1 });
    for (const first of [{ name: "e", exclusive: true }, { name: "l", locks: ["a", "b", "c"] }, { name: "p" }]) {
      expect(gate.pick([first, { name: "other", locks: ["a"] }])).toBe(0);
    }
  });

  test("waits: from the first time a free slot passed the shard over to its start, with what it waited for", () => {
    let clock = 1000;
    const gate = gateOf({}, () => clock);
    const holder = { name: "h", locks: ["skill-docs"] };
    const waiter = { name: "w", locks: ["skill-docs"] };
    gate.start(holder);
    gate.pick([waiter]);
    clock = 1500;
    expect(gate.waiting(waiter)).toEqual({ ms: 500, for: ["resource skill-docs"] });
    clock = 42_200;
    gate.pick([waiter]);
    gate.end(holder);
    expect(gate.pick([waiter])).toBe(0);
    gate.start(waiter);
    expect(gate.waited(waiter)).toEqual({ ms: 41_200, for: ["resource skill-docs"] });
    expect(gate.waiting(waiter)).toBeNull();
    expect(gate.waited(holder)).toBeNull();
  });

  test("what exclusive shards wait for, and what waits for them, is named", () => {
    const gate = gateOf();
    const r = { name: "r" };
    const ex = { name: "ex", exclusive: true };
    gate.start(r);
    gate.pick([ex]);
    expect(gate.waiting(ex)!.for).toEqual([DRAIN]);
    gate.end(r);
    gate.start(ex);
    const after = { name: "after" };
    gate.pick([after]);
    expect(gate.waiting(after)!.for).toEqual([EXCLUSIVE_RUNNING]);
  });

  test("end is idempotent: a shard ended twice frees its resource once", () => {
    const gate = gateOf({ q: 2 });
    const a = { name: "a", locks: ["q"] };
    const b = { name: "b", locks: ["q"] };
    gate.start(a);
    gate.start(b);
    gate.end(a);
    gate.end(a);
    expect(
      gate.pick([
        { name: "c", locks: ["q"] },
        { name: "d", locks: ["q"] },
      ]),
    ).toBe(0);
    gate.start({ name: "c", locks: ["q"] } as Item);
    expect(gate.running).toBe(2);
  });
});

describe("simulateMakespan", () => {
  test(
    "an exclusive shard last adds its own duration to the parallel phase; two holders of one lock run one " +
      "after the other",
    () => {
      const ms = (i: Item) => ({ long: 10_000, ex: 3_000 })[i.name as "long" | "ex"] ?? 2_000;
      const parallel: Item[] = [{ name: "long" }, { name: "s1" }, { name: "s2" }, { name: "s3" }];
      expect(simulateMakespan(parallel, 4, ms, needs, new Map())).toBe(10_000);
      expect(simulateMakespan([...parallel, { name: "ex", exclusive: true }], 4, ms, needs, new Map())).toBe(13_000);
      const locked: Item[] = [
        { name: "l1", locks: ["port"] },
        { name: "l2", locks: ["port"] },
      ];
      expect(simulateMakespan(locked, 4, ms, needs, new Map())).toBe(4_000);
      expect(simulateMakespan(locked, 4, ms, needs, new Map([["port", 2]]))).toBe(2_000);
    },
  );
});

describe("runPool with a gate", () => {
  test("holders of one resource never overlap, others fill the pool, an exclusive item runs alone", async () => {
    const items: Item[] = [
      { name: "a", locks: ["db"] },
      { name: "b", locks: ["db"] },
      { name: "c" },
      { name: "d" },
      { name: "ex", exclusive: true },
      { name: "e" },
    ];
    const live = new Set<string>();
    const seen: { name: string; alive: string[] }[] = [];
    const gate = new ResourceGate<Item>(needs, new Map());
    await runPool(
      items,
      3,
      async (item) => {
        seen.push({ name: item.name, alive: [...live] });
        live.add(item.name);
        await Bun.sleep(item.name === "a" ? 40 : 15);
        live.delete(item.name);
        return item.name;
      },
      () => false,
      gate,
    );
    const at = (n: string) => seen.find((s) => s.name === n)!;
    expect(at("b").alive).not.toContain("a");
    expect(at("ex").alive).toEqual([]);
    // c and d started while a held db and b waited for it.
    expect(at("c").alive).toContain("a");
    expect(seen.findIndex((s) => s.name === "b")).toBeGreaterThan(seen.findIndex((s) => s.name === "d"));
    expect(at("e").alive).not.toContain("ex");
  });

  test("an item's resources are free once it calls release, before its work resolves", async () => {
    const order: string[] = [];
    const gate = new ResourceGate<Item>(needs, new Map());
    await runPool(
      [
        { name: "a", locks: ["db"] },
        { name: "b", locks: ["db"] },
      ] as Item[],
      2,
      async (item, _enqueue, release) => {
        order.push(`start ${item.name}`);
        await Bun.sleep(5);
        release();
        await Bun.sleep(30);
        order.push(`end ${item.name}`);
      },
      () => false,
      gate,
    );
    expect(order.slice(0, 3)).toEqual(["start a", "start b", "end a"]);
  });
});

describe("plan side", () => {
  test("a shard holds the union of its files' resources; exclusive when any file is", () => {
    const plan = resourcePlan({
      exclusive: ["test/gen-*.test.ts"],
      resources: {
        docs: { files: ["test/gen-*.test.ts", "test/read.test.ts"], capacity: 1 },
        port: { files: ["test/net/**"], capacity: 2 },
      },
    });
    expect(plan.active).toBe(true);
    expect(plan.needsOf(["test/read.test.ts", "test/net/a.test.ts"])).toEqual({
      locks: ["docs", "port"],
      exclusive: false,
    });
    expect(plan.needsOf(["test/gen-x.test.ts"])).toEqual({ locks: ["docs"], exclusive: true });
    expect(plan.capacity.get("port")).toBe(2);
    expect(resourcePlan({ exclusive: [], resources: {} }).active).toBe(false);
  });

  test(
    "a plain path naming a directory holds every file " + "under it, as a pattern does; a file path only that file",
    () => {
      const plan = resourcePlan({
        exclusive: ["test/gen/"],
        resources: { db: { files: ["test/db", "test/one.test.ts"], capacity: 1 } },
      });
      expect(plan.needsOf(["test/db/a.test.ts"])).toEqual({ locks: ["db"], exclusive: false });
      expect(plan.needsOf(["test/db-other/a.test.ts", "test/one.test.ts.bak"])).toEqual({
        locks: [],
        exclusive: false,
      });
      expect(plan.needsOf(["test/gen/deep/x.test.ts"])).toEqual({ locks: [], exclusive: true });
    },
  );

  test(
    "--files-per-shard never batches an exclusive file with " + "another; the others are batched as if it were absent",
    () => {
      const files = ["a.test.ts", "b.test.ts", "c.test.ts", "d.test.ts", "gen.test.ts", "z.test.ts"];
      const alone = (f: string) => f.startsWith("c") || f.startsWith("gen");
      const shards = groupIntoShards(files, 2, { alone });
      expect(shards.map((s) => s.files)).toEqual([
        ["a.test.ts", "b.test.ts"],
        ["c.test.ts"],
        ["d.test.ts", "z.test.ts"],
        ["gen.test.ts"],
      ]);
      expect(shards.map((s) => s.index)).toEqual([1, 2, 3, 4]);
      expect(groupIntoShards(files, 4).map((s) => s.files.length)).toEqual([4, 2]);
      // --files-per-shard auto too: the exclusive files alone, the rest batched among themselves.
      const auto = groupIntoShards(files, "auto", { alone, batching: { durations: new Map(), jobs: 2 } }).map(
        (s) => s.files,
      );
      expect(auto.filter((g) => g.some(alone))).toEqual([["c.test.ts"], ["gen.test.ts"]]);
      expect(auto.flat().sort()).toEqual([...files].sort());
    },
  );

  test("exclusive shards are dispatched last, each group in its order", () => {
    const plan = resourcePlan({ exclusive: ["x*"], resources: {} });
    const shards = ["x1", "a", "x2", "b"].map((f, i) => ({ index: i + 1, files: [f] }));
    expect(exclusiveLast(shards, plan).map((s) => s.files[0])).toEqual(["a", "b", "x1", "x2"]);
  });
});

test("the START line names a wait of 50 ms or more, not a shorter one", () => {
  expect(describeWait({ ms: 41_230, for: ["resource skill-docs"] })).toBe("waited 41.2 s for resource skill-docs");
  expect(describeWait({ ms: 49, for: ["resource ws"] })).toBe("");
  expect(describeWait(null)).toBe("");
});
