/**
 * The work per test does not grow with describe depth or with the tests
 * seen so far (issue: P8 for every shape). Counted, not timed: lookups in
 * the event model's describe and test maps, and the elements the JUnit
 * reader joins, for shallow and deep trees of the same tests.
 */
import { describe, expect, test } from "bun:test";
import { TestEventModel } from "../runner/events/test-model.ts";
import { readBunJUnit } from "../runner/results/bun-junit.ts";
import type { TestEvent } from "../runner/events/wire.ts";

const ROOT = "/project";
const URL = `${ROOT}/t/a.test.ts`;

/** Counts `get` calls on `map` (an own property over the prototype's method). */
function countGets<K, V>(map: Map<K, V>): { n: number } {
  const counter = { n: 0 };
  const get = map.get.bind(map);
  map.get = (key: K) => {
    counter.n += 1;
    return get(key);
  };
  return counter;
}

/**
 * A chain of `depth` describes with `perLevel` tests at each level, every
 * test started and passed; the model and how many describe lookups its
 * events cost. Ids: describes 1…depth, tests after them.
 */
function chain(depth: number, perLevel: number) {
  const model = new TestEventModel({ root: ROOT, now: () => 0 });
  // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
  const gets = countGets(model["describes"]);
  let id = depth;
  const tests: number[] = [];
  for (let level = 1; level <= depth; level++) {
    model.found(level, URL, level, `level ${level}`, "describe", level === 1 ? undefined : level - 1);
    for (let i = 0; i < perLevel; i++) {
      model.found(++id, URL, 1000 + id, `t${i}`, "test", level);
      tests.push(id);
    }
  }
  for (const t of tests) {
    model.start(t);
    model.end(t, "pass", 1000);
  }
  return { model, gets, tests: tests.length, events: 3 * tests.length + depth };
}

describe("describe depth", () => {
  test.each([2, 50, 500])(
    "depth %i: each event looks up at most one describe, each full name one per test and two per describe",
    (depth) => {
      const { model, gets, tests, events } = chain(depth, 3);
      expect(gets.n).toBeLessThanOrEqual(events);
      gets.n = 0;
      const names = model.eventTests(0).map((t) => t.name);
      // Walking the chain per describe (or per test) would cost ~depth²/2 (or depth × tests).
      expect(gets.n).toBeLessThanOrEqual(tests + 2 * depth);
      const path = Array.from({ length: depth }, (_, i) => `level ${i + 1}`).join(" > ");
      expect(names.at(-1)).toBe(`${path} > t2`);
      expect(names[0]).toBe("level 1 > t0");
      expect(names).toHaveLength(tests);
    },
  );

  test("a second reading of the full names looks nothing up again but the test's own describe", () => {
    const { model, gets, tests } = chain(300, 2);
    const first = model.eventTests(0).map((t) => t.name);
    gets.n = 0;
    expect(model.eventTests(0).map((t) => t.name)).toEqual(first);
    expect(gets.n).toBe(tests);
  });

  test(
    "a describe found after its child's test still names " + "it; a loop of parent ids ends (nothing kept for either)",
    () => {
      const model = new TestEventModel({ root: ROOT, now: () => 0 });
      model.found(3, URL, 1, "inner", "describe", 2);
      model.found(10, URL, 2, "leaf", "test", 3);
      expect(model.eventTests(0)[0]!.name).toBe("inner > leaf");
      model.found(2, URL, 3, "outer", "describe", undefined);
      expect(model.eventTests(0)[0]!.name).toBe("outer > inner > leaf");
      model.found(5, URL, 4, "a", "describe", 6);
      model.found(6, URL, 5, "b", "describe", 5);
      model.found(11, URL, 6, "looped", "test", 5);
      expect(model.eventTests(0)[1]!.name).toBe("b > a > looped");
    },
  );

  test("the test in flight at depth 200: its full name from the kept prefix", () => {
    const { model } = chain(200, 1);
    model.found(9999, URL, 1, "deep", "test", 200);
    model.start(9999);
    // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
    const gets = countGets(model["describes"]);
    const first = model.running()!.fullName;
    expect(first.endsWith("level 199 > level 200 > deep")).toBe(true);
    gets.n = 0;
    for (let i = 0; i < 10; i++) expect(model.running()!.fullName).toBe(first);
    expect(gets.n).toBe(10);
  });
});

describe("tests seen so far", () => {
  /** A model with `n` ended tests of one file; calls to its test map's `values()` counted. */
  function ended(n: number) {
    const model = new TestEventModel({ root: ROOT, now: () => 0 });
    for (let id = 1; id <= n; id++) {
      model.found(id, URL, id, `t${id}`, "test", undefined);
      model.start(id);
      model.end(id, "pass", 1);
    }
    // biome-ignore lint/complexity/useLiteralKeys: a private member, reached by its name on purpose
    const map = model["tests_"];
    const counter = { n: 0 };
    const values = map.values.bind(map);
    map.values = () => {
      counter.n += 1;
      return values();
    };
    return { model, walks: counter };
  }
  const outside = (message: string): TestEvent => ({
    method: "LifecycleReporter.error",
    params: { message, name: "Error", urls: [URL], lineColumns: [1, 1] },
  });

  test("errors outside tests walk the tests at most once between founds", () => {
    const { model, walks } = ended(5000);
    for (let i = 0; i < 100; i++) model.apply(outside(`e${i}`));
    expect(walks.n).toBeLessThanOrEqual(1);
    expect(model.errorsOutsideTests().map((e) => e.file)).toEqual(Array(8 + 1).fill("t/a.test.ts"));
    // A found may change the files: asked again once.
    model.found(6000, `${ROOT}/t/b.test.ts`, 1, "b", "test", undefined);
    model.apply({
      method: "LifecycleReporter.error",
      params: { message: "in b", name: "Error", urls: [`${ROOT}/t/b.test.ts`], lineColumns: [1, 1] },
    });
    expect(walks.n).toBeLessThanOrEqual(2);
    expect(model.errorsOutsideTests().at(-1)!.file).toBe("t/b.test.ts");
    expect(model.files()).toEqual(["t/a.test.ts", "t/b.test.ts"]);
  });

  test("an error among concurrent tests looks at the running ones, not at every test seen", () => {
    const { model, walks } = ended(5000);
    model.found(7001, URL, 7001, "c1", "test", undefined);
    model.found(7002, URL, 7002, "c2", "test", undefined);
    model.start(7001);
    model.start(7002);
    // No usable line: the test started last owns it, the running ones could.
    for (let i = 0; i < 50; i++)
      model.apply({
        method: "LifecycleReporter.error",
        params: { message: `e${i}`, name: "Error", urls: [], lineColumns: [] },
      });
    model.apply({
      method: "LifecycleReporter.error",
      params: { message: "at c1", name: "Error", urls: [URL], lineColumns: [7001, 3] },
    });
    expect(walks.n).toBe(0);
    model.end(7001, "fail", 1);
    model.end(7002, "fail", 1);
    const [c1, c2] = model.eventTests(0).slice(-2);
    expect(c1!.failure?.message).toContain("at c1");
    expect(c2!.failure?.message).toContain("e49");
  });
});

describe("Bun's JUnit, nested", () => {
  /** A JUnit document of `cases` testcases under `depth` nested describe suites. */
  function nested(depth: number, cases: number): string {
    const open = Array.from({ length: depth }, (_, i) => `<testsuite name="d${i}">`).join("");
    const testcases = Array.from(
      { length: cases },
      (_, i) => `<testcase name="t${i}" time="0.001" line="${i + 1}" />`,
    ).join("\n");
    return (
      `<testsuites><testsuite name="t/a.test.ts" file="t/a.test.ts">${open}\n` +
      `${testcases}\n${"</testsuite>".repeat(depth)}</testsuite></testsuites>`
    );
  }
  /** `fn()`, with the array elements Array#join was given meanwhile counted. */
  function joinedWhile<T>(fn: () => T): { value: T; joined: number } {
    const join = Array.prototype.join;
    let joined = 0;
    Array.prototype.join = function (this: unknown[], separator?: string) {
      joined += this.length;
      return join.call(this, separator);
    };
    try {
      return { value: fn(), joined };
    } finally {
      Array.prototype.join = join;
    }
  }

  test(
    "a testcase's name is its describe path and its name, " + "with no work per testcase that grows with the depth",
    () => {
      const shallow = joinedWhile(() => readBunJUnit(nested(2, 2000)));
      const deep = joinedWhile(() => readBunJUnit(nested(200, 2000)));
      // The 198 more describes cost a few elements each; joining the describe
      // path per testcase would add ~198 for each of the 2,000 testcases.
      expect(deep.joined - shallow.joined).toBeLessThan(2000);
      const path = Array.from({ length: 200 }, (_, i) => `d${i}`).join(" > ");
      const tests = deep.value[0]!.tests;
      expect(tests).toHaveLength(2000);
      expect(tests[0]!.name).toBe(`${path} > t0`);
      expect(tests[1999]!.name).toBe(`${path} > t1999`);
      expect(shallow.value[0]!.tests[5]!.name).toBe("d0 > d1 > t5");
    },
  );

  test("siblings after a nested block get their own path back", () => {
    const xml =
      `<testsuites><testsuite name="f" file="f"><testsuite name="a"><testsuite name="b"><testcase ` +
      `name="x" line="1"/></testsuite><testcase name="y" line="2"/></testsuite><testcase name="z" ` +
      `line="3"/><testsuite name=""><testcase name="w" line="4"/></testsuite></testsuite></testsuites>`;
    expect(readBunJUnit(xml)[0]!.tests.map((t) => t.name)).toEqual(["a > b > x", "a > y", "z", " > w"]);
  });
});
