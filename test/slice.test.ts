/** Slicing a plan for several machines (`--shard I/N`): disjoint, covering, balanced, the same everywhere. */
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { groupIntoShards, type PlannedShard } from "../runner/plan/plan.ts";
import { parseSliceSpec, sliceManifest, sliceShards } from "../runner/plan/slice.ts";

const files = (n: number) => Array.from({ length: n }, (_, i) => `t/${String(i).padStart(2, "0")}.test.ts`);
const ids = (slice: readonly PlannedShard[]) => slice.map((s) => s.index);

describe("sliceShards", () => {
  for (const perShard of [1, 3]) {
    test(
      `slices are disjoint, cover the plan and keep plan order, for N from 1 to shards+2 (files per shard ` +
        `${perShard})`,
      () => {
        const shards = groupIntoShards(files(7), perShard);
        for (let n = 1; n <= shards.length + 2; n++) {
          const slices = sliceShards(shards, n);
          expect(slices).toHaveLength(n);
          const all = slices.flatMap(ids);
          expect(new Set(all).size).toBe(all.length); // disjoint
          expect([...all].sort((a, b) => a - b)).toEqual(shards.map((s) => s.index)); // covering
          for (const slice of slices) expect(ids(slice)).toEqual([...ids(slice)].sort((a, b) => a - b));
          const empty = slices.filter((s) => s.length === 0).length;
          expect(empty).toBe(Math.max(0, n - shards.length)); // none empty while N <= shards
          // Balanced by file count: slices differ by at most one shard's files.
          const sizes = slices.filter((s) => s.length > 0).map((s) => s.flatMap((x) => x.files).length);
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(perShard);
        }
      },
    );
  }

  test("with durations: longest first into the lightest slice", () => {
    const shards = groupIntoShards(["a", "b", "c", "d", "e"], 1);
    const ms = new Map([
      ["a", 100],
      ["b", 10],
      ["c", 60],
      ["d", 50],
      ["e", 40],
    ]);
    const slices = sliceShards(shards, 2, ms);
    // a(100) → 1; c(60) → 2; d(50) → 2 (60 < 100); e(40) → 1 (100 < 110); b(10) → 2 (110 < 140).
    expect(slices.map((s) => s.flatMap((x) => x.files))).toEqual([
      ["a", "e"],
      ["b", "c", "d"],
    ]);
  });

  test("an unknown file weighs the mean of the recorded ones; zero durations still leave no slice empty", () => {
    const shards = groupIntoShards(["a", "b", "c"], 1);
    expect(
      sliceShards(
        shards,
        2,
        new Map([
          ["a", 10],
          ["b", 30],
        ]),
      ).map((s) => s.flatMap((x) => x.files)),
    ).toEqual([["b"], ["a", "c"]]);
    const zero = sliceShards(
      shards,
      3,
      new Map([
        ["a", 0],
        ["b", 0],
        ["c", 0],
      ]),
    );
    expect(zero.map((s) => s.length)).toEqual([1, 1, 1]);
  });

  test("the same plan gives the same slices and hash; another grouping or N another hash", () => {
    const shards = groupIntoShards(files(5), 1);
    const a = sliceManifest(shards, sliceShards(shards, 2));
    const b = sliceManifest(groupIntoShards(files(5), 1), sliceShards(groupIntoShards(files(5), 1), 2));
    expect(a).toEqual(b);
    expect(a.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(a.shards.map((s) => s.slice).sort()).toEqual([1, 1, 1, 2, 2]);
    expect(sliceManifest(shards, sliceShards(shards, 3)).hash).not.toBe(a.hash);
    const regrouped = groupIntoShards(files(5), 2);
    expect(sliceManifest(regrouped, sliceShards(regrouped, 2)).hash).not.toBe(a.hash);
    const timed = sliceShards(
      shards,
      2,
      new Map([
        [files(5)[0]!, 1000],
        [files(5)[1]!, 1],
      ]),
    );
    expect(sliceManifest(shards, timed).hash).not.toBe(a.hash);
  });
});

describe("parseSliceSpec", () => {
  test("accepts I/N with 1 <= I <= N", () => {
    expect(parseSliceSpec("2/3")).toEqual({ index: 2, count: 3 });
    expect(parseSliceSpec("1/1")).toEqual({ index: 1, count: 1 });
  });
  test("rejects everything else with one line naming the value", () => {
    for (const bad of ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/3/4", ""]) {
      expect(() => parseSliceSpec(bad)).toThrow(ConfigError);
    }
    expect(() => parseSliceSpec("4/3")).toThrow('invalid --shard "4/3": expected I/N');
  });
});
