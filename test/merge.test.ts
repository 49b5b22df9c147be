/** results/merge.ts: the completeness rule and what a merge refuses, on report models. */
import { describe, expect, test } from "bun:test";
import { mergeSlices, MergeError, type SliceReport } from "../runner/results/merge.ts";
import type { PlanManifest, RunReport } from "../runner/results/report-model.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

const plan: PlanManifest = {
  hash: "0123456789abcdef",
  slices: 2,
  shards: [
    { index: 1, slug: "a", files: ["a.test.ts"], slice: 1 },
    { index: 2, slug: "b-and-1-more", files: ["b.test.ts", "c.test.ts"], slice: 2 },
    { index: 3, slug: "d", files: ["d.test.ts"], slice: 1 },
  ],
};
const options = { runId: "merge-1", toolVersion: "0.1.0", now: new Date("2025-01-02T04:00:00Z") };
const passed = (index: number, files: string[]) =>
  makeShard({ index, files, tests: files.map((file) => makeTest({ name: "t", file })) });
const slice = (index: number, shards: RunReport["shards"], fields: Partial<RunReport> = {}): SliceReport => ({
  source: `dir${index}`,
  report: makeReport(shards, { plan, slice: { index, count: 2 }, exitCode: 0, runId: `run-${index}`, ...fields }),
});

describe("mergeSlices", () => {
  test("every slice reported and passed: the plan in order, renumbered, exit 0", () => {
    const report = mergeSlices(
      [
        slice(2, [passed(1, ["b.test.ts", "c.test.ts"])]),
        slice(1, [passed(1, ["a.test.ts"]), passed(2, ["d.test.ts"])]),
      ],
      options,
    );
    expect(report.shards.map((s) => [s.index, s.files])).toEqual([
      [1, ["a.test.ts"]],
      [2, ["b.test.ts", "c.test.ts"]],
      [3, ["d.test.ts"]],
    ]);
    expect(report.exitCode).toBe(0);
    expect(report.completed).toBe(true);
    expect(report.plan).toEqual(plan);
    expect(report.merged!.slices.map((s) => s.runId)).toEqual(["run-1", "run-2"]);
  });

  test("a slice that reported nothing: its files never-started with the reason, exit 1", () => {
    const report = mergeSlices([slice(1, [passed(1, ["a.test.ts"]), passed(2, ["d.test.ts"])])], options);
    const lost = report.shards.find((s) => s.files.includes("b.test.ts"))!;
    expect(lost).toMatchObject({
      status: "never-started",
      reason: "slice 2/2 reported nothing",
      files: ["b.test.ts", "c.test.ts"],
    });
    expect(lost.tests.map((t) => [t.file, t.status])).toEqual([
      ["b.test.ts", "never-started"],
      ["c.test.ts", "never-started"],
    ]);
    expect(report.exitCode).toBe(1);
    expect(report.completed).toBe(false);
  });

  test("a slice that left out one of its files, or exited non-zero with all shards passed: exit 1", () => {
    const partial = mergeSlices(
      [slice(1, [passed(1, ["a.test.ts"])]), slice(2, [passed(1, ["b.test.ts", "c.test.ts"])])],
      options,
    );
    expect(partial.shards.find((s) => s.files.includes("d.test.ts"))!.reason).toBe(
      "slice 1/2 did not report this file",
    );
    expect(partial.exitCode).toBe(1);
    const cancelled = mergeSlices(
      [
        slice(1, [passed(1, ["a.test.ts"]), passed(2, ["d.test.ts"])], { exitCode: 130 }),
        slice(2, [passed(1, ["b.test.ts", "c.test.ts"])]),
      ],
      options,
    );
    expect(cancelled.exitCode).toBe(1);
  });

  test("refused: a file reported twice, a file of another slice, another plan, not a slice, nothing", () => {
    const twice = () =>
      mergeSlices(
        [slice(1, [passed(1, ["a.test.ts"]), passed(2, ["d.test.ts"])]), slice(2, [passed(1, ["a.test.ts"])])],
        options,
      );
    expect(twice).toThrow(MergeError);
    expect(twice).toThrow("a.test.ts is reported by slice 1/2 (dir1) and slice 2/2 (dir2)");
    expect(() => mergeSlices([slice(2, [passed(1, ["d.test.ts"])])], options)).toThrow(
      "slice 2/2 (dir2) reports d.test.ts, which the plan gives to slice 1/2",
    );
    const other = slice(2, [], { plan: { ...plan, hash: "fedcba9876543210" } });
    expect(() => mergeSlices([slice(1, []), other], options)).toThrow(
      /different plans: slice 1\/2 \(dir1\) has plan hash 0123456789abcdef, slice 2\/2 \(dir2\) has plan hash fedcba9876543210/,
    );
    expect(() => mergeSlices([{ source: "plain", report: makeReport([]) }], options)).toThrow(
      "plain: run run-1 is not a slice of a plan",
    );
    expect(() => mergeSlices([], options)).toThrow(MergeError);
  });
});
