/** Slicing a plan for several machines (`--shard I/N`): disjoint, covering, balanced, the same everywhere. */
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { groupIntoShards, type PlannedShard } from "../runner/plan/plan.ts";
import { MAX_SLICES, parseSliceSpec, sliceManifest, sliceShards } from "../runner/plan/slice.ts";
import { CI_SLICE_VARS, sliceFromCiEnv } from "../runner/plan/ci-slice.ts";
import { existsSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, runCli } from "./helpers/cli.ts";

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

describe("--shard auto: the slice from the CI's parallel-job variables", () => {
  const ok: [string, Record<string, string>, { index: number; count: number }][] = [
    ["GitLab counts from 1", { CI_NODE_INDEX: "1", CI_NODE_TOTAL: "3" }, { index: 1, count: 3 }],
    ["GitLab, the last job", { CI_NODE_INDEX: "3", CI_NODE_TOTAL: "3" }, { index: 3, count: 3 }],
    [
      "Buildkite counts from 0",
      { BUILDKITE_PARALLEL_JOB: "0", BUILDKITE_PARALLEL_JOB_COUNT: "4" },
      { index: 1, count: 4 },
    ],
    [
      "Buildkite, the last job",
      { BUILDKITE_PARALLEL_JOB: "3", BUILDKITE_PARALLEL_JOB_COUNT: "4" },
      { index: 4, count: 4 },
    ],
    ["CircleCI counts from 0", { CIRCLE_NODE_INDEX: "1", CIRCLE_NODE_TOTAL: "2" }, { index: 2, count: 2 }],
    ["one job", { CIRCLE_NODE_INDEX: "0", CIRCLE_NODE_TOTAL: "1" }, { index: 1, count: 1 }],
  ];
  for (const [what, env, slice] of ok) {
    test(what, () => {
      expect(sliceFromCiEnv(env, MAX_SLICES)).toEqual(slice);
      expect(parseSliceSpec("auto", env)).toEqual(slice);
    });
  }

  const bad: [string, Record<string, string>, string][] = [
    [
      "nothing set (GitHub Actions sets none)",
      {},
      "--shard auto: no CI parallel-job variables are set; it reads GitLab",
    ],
    ["GitLab's index 0 (it counts from 1)", { CI_NODE_INDEX: "0", CI_NODE_TOTAL: "3" }, 'CI_NODE_INDEX="0"'],
    [
      "Buildkite's index = count",
      { BUILDKITE_PARALLEL_JOB: "4", BUILDKITE_PARALLEL_JOB_COUNT: "4" },
      "counts BUILDKITE_PARALLEL_JOB from 0",
    ],
    ["a total of 0", { CIRCLE_NODE_INDEX: "0", CIRCLE_NODE_TOTAL: "0" }, 'CIRCLE_NODE_TOTAL="0" are not a slice'],
    ["not a number", { CI_NODE_INDEX: "two", CI_NODE_TOTAL: "3" }, 'CI_NODE_INDEX="two"'],
    ["a negative index", { CIRCLE_NODE_INDEX: "-1", CIRCLE_NODE_TOTAL: "2" }, 'CIRCLE_NODE_INDEX="-1"'],
    ["over the largest total", { CI_NODE_INDEX: "1", CI_NODE_TOTAL: String(MAX_SLICES + 1) }, `<= ${MAX_SLICES}`],
    ["the index without the total", { CI_NODE_INDEX: "1" }, "CI_NODE_INDEX is set but CI_NODE_TOTAL is not"],
    [
      "the total without the index",
      { CIRCLE_NODE_TOTAL: "2" },
      "CIRCLE_NODE_TOTAL is set but CIRCLE_NODE_INDEX is not",
    ],
    [
      "two CIs",
      { CI_NODE_INDEX: "1", CI_NODE_TOTAL: "2", CIRCLE_NODE_INDEX: "0", CIRCLE_NODE_TOTAL: "2" },
      "GitLab and CircleCI",
    ],
  ];
  for (const [what, env, message] of bad) {
    test(`refused in one line: ${what}`, () => {
      expect(() => sliceFromCiEnv(env, MAX_SLICES)).toThrow(ConfigError);
      expect(() => sliceFromCiEnv(env, MAX_SLICES)).toThrow(message);
      try {
        sliceFromCiEnv(env, MAX_SLICES);
      } catch (error) {
        expect((error as Error).message).not.toContain("\n");
      }
    });
  }
  test("the message where none is set says GitHub Actions has none", () => {
    expect(() => sliceFromCiEnv({}, MAX_SLICES)).toThrow("GitHub Actions sets none: give each matrix job --shard I/N");
  });
});

describe("shardguard run --shard auto", () => {
  // The host's own CI variables must not decide what these runs read.
  const none = Object.fromEntries(
    CI_SLICE_VARS.flatMap((v) => [
      [v.index, undefined],
      [v.total, undefined],
    ]),
  );
  const passing = `import { test } from "bun:test";\ntest("ok", () => {});\n`;

  test("runs CircleCI's slice (CIRCLE_NODE_INDEX 1 of 2: slice 2/2); none set or a bad value: one line, exit 2", async () => {
    const dir = makeSuite({ "a.test.ts": passing, "b.test.ts": passing, "c.test.ts": passing, "d.test.ts": passing });
    const run = await runCli(["run", "--root", dir, "--shard", "auto", "--jobs", "2"], {
      env: { ...none, CIRCLE_NODE_INDEX: "1", CIRCLE_NODE_TOTAL: "2" },
    });
    expect(run.code).toBe(0);
    const report = readReport(dir);
    expect(report.slice).toMatchObject({ index: 2, count: 2 });
    expect(report.shards).toHaveLength(2);

    const fresh = makeSuite({ "a.test.ts": passing });
    for (const env of [none, { ...none, CIRCLE_NODE_INDEX: "2", CIRCLE_NODE_TOTAL: "2" }]) {
      const refused = await runCli(["run", "--root", fresh, "--shard", "auto"], { env });
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(refused.stderr).toStartWith("shardguard: --shard auto: ");
      expect(existsSync(path.join(fresh, ".shardguard"))).toBe(false);
    }
  }, 60_000);
});
