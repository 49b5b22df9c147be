/**
 * Pure tests of the file attribution rules (runner/events/attribution.ts)
 * through the event model: event sequences shaped as Bun 1.4.4 sends them
 * for tests defined through a helper module (the helper's url and line in
 * every `found`, describes included). The real-process tests are in
 * helper-defined.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { TestEventModel } from "../runner/events/test-model.ts";
import { testStates } from "./helpers/model-states.ts";
import type { TestEvent } from "../runner/events/wire.ts";

const ROOT = "/project";
const HELPER = `${ROOT}/test/helpers/h.ts`;
const A = "test/a.test.ts";
const B = "test/b.test.ts";

const found = (
  id: number,
  name: string,
  url = HELPER,
  parentId?: number,
  type: "test" | "describe" = "test",
): TestEvent => ({
  method: "TestReporter.found",
  params: { id, url, line: 3, name, type, ...(parentId === undefined ? {} : { parentId }) },
});
const start = (id: number): TestEvent => ({ method: "TestReporter.start", params: { id } });
const end = (id: number, status: "pass" | "fail" = "pass"): TestEvent => ({
  method: "TestReporter.end",
  params: { id, status, elapsed: 0 },
});
const error = (message: string): TestEvent => ({
  method: "LifecycleReporter.error",
  params: { message, name: "Error", urls: [`${ROOT}/${A}`], lineColumns: [9, 1], sourceLines: ["x"] },
});

const placed = (model: TestEventModel) => testStates(model).map((t) => [t.name, t.file, t.line ?? null]);

describe("mapping helper-defined tests to planned files", () => {
  test("a single-file shard: every test is in its file, without the helper's line", () => {
    const model = TestEventModel.fromEvents(
      [found(1, "D", HELPER, undefined, "describe"), found(2, "t", HELPER, 1), start(2), end(2)],
      { root: ROOT, files: [A] },
    );
    expect(placed(model)).toEqual([["t", A, null]]);
    expect(testStates(model)[0]!.describePath).toEqual(["D"]);
  });

  test("without planned files the url stands, line included", () => {
    const model = TestEventModel.fromEvents([found(1, "t")], { root: ROOT });
    expect(placed(model)).toEqual([["t", "test/helpers/h.ts", 3]]);
  });

  test("a found block naming one planned file maps the helper's tests in it; the direct test keeps its line", () => {
    const model = TestEventModel.fromEvents(
      [found(1, "h1"), found(2, "direct", `${ROOT}/${A}`), start(1), end(1), found(3, "h2"), start(3)],
      {
        root: ROOT,
        files: [A, B],
      },
    );
    expect(placed(model)).toEqual([
      ["h1", A, null],
      ["direct", A, 3],
      ["h2", "test/helpers/h.ts", null],
    ]);
  });

  test("a block naming two planned files proves nothing for its helper tests", () => {
    const model = TestEventModel.fromEvents(
      [found(1, "x", `${ROOT}/${A}`), found(2, "h"), found(3, "y", `${ROOT}/${B}`)],
      { root: ROOT, files: [A, B] },
    );
    expect(placed(model)).toEqual([
      ["x", A, 3],
      ["h", "test/helpers/h.ts", null],
      ["y", B, 3],
    ]);
  });

  test("the preload's file records map started blocks in order, only when the counts agree", () => {
    const events = [found(1, "a1"), start(1), end(1), found(2, "b1"), start(2), end(2)];
    const mapped = TestEventModel.fromEvents(events, { root: ROOT, files: [A, B] });
    mapped.applyFileStarts([`${ROOT}/${A}`, `${ROOT}/${B}`]);
    expect(placed(mapped)).toEqual([
      ["a1", A, null],
      ["b1", B, null],
    ]);
    const mismatched = TestEventModel.fromEvents(events, { root: ROOT, files: [A, B] });
    mismatched.applyFileStarts([`${ROOT}/${A}`]);
    expect(placed(mismatched).map((r) => r[1])).toEqual(["test/helpers/h.ts", "test/helpers/h.ts"]);
  });
});

describe("an error while several helper-defined tests run (no line tells whose it is)", () => {
  const errorsOf = (model: TestEventModel) => testStates(model).map((t) => [t.name, t.errors.map((e) => e.message)]);

  test("the test that is retried next claims it, not the test started last", () => {
    const model = TestEventModel.fromEvents(
      [found(1, "flaky"), found(2, "ok"), start(1), start(2), error("boom"), start(1), end(2), end(1)],
      { root: ROOT, files: [A] },
    );
    expect(errorsOf(model)).toEqual([
      ["flaky", ["boom"]],
      ["ok", []],
    ]);
    expect(testStates(model)[0]!.flaky).toBe(true);
    expect(testStates(model)[0]!.attemptFailures.map((f) => f.message)).toEqual(["boom"]);
  });

  test("two concurrent failures keep one error each; a passing test keeps none", () => {
    const model = TestEventModel.fromEvents(
      [
        found(1, "x"),
        found(2, "y"),
        found(3, "z"),
        start(1),
        start(2),
        start(3),
        error("e1"),
        error("e2"),
        end(3),
        end(2, "fail"),
        end(1, "fail"),
      ],
      { root: ROOT, files: [A] },
    );
    expect(errorsOf(model)).toEqual([
      ["x", ["e2"]],
      ["y", ["e1"]],
      ["z", []],
    ]);
  });

  test("when all other candidates pass, the error moves to the one left", () => {
    const model = TestEventModel.fromEvents([found(1, "a"), found(2, "b"), start(1), start(2), error("boom"), end(2)], {
      root: ROOT,
      files: [A],
    });
    expect(errorsOf(model)).toEqual([
      ["a", ["boom"]],
      ["b", []],
    ]);
  });
});
