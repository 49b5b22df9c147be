/**
 * readBunJUnit against the JUnit files that real `bun test` children write.
 * The fixture test files are written to a temp dir and run with the same Bun
 * binary that runs this test.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BunJUnitParseError, readBunJUnit, type BunJUnitFile } from "../runner/results/bun-junit.ts";
import type { TestResult } from "../runner/results/report-model.ts";
import { tempDir } from "./helpers/cli.ts";

// Line numbers matter: the assertions below refer to them.
const MIXED = `import { describe, expect, test } from "bun:test";
test("first", () => { expect(1).toBe(1); });
describe("outer", () => {
  describe("inner", () => {
    test("passes", () => { expect(2).toBe(2); });
  });
  test("slow", async () => { await Bun.sleep(60); });
});
test("fails", () => { expect(1).toBe(2); });
test.skip("is skipped", () => {});
test.todo("is todo");
test("hostile", () => { throw new TypeError("\\x1b[31mred\\x1b[0m \\x01 <&> ]]> \\u{1F600}"); });
test("last", () => {});
`;

const ONLY_DESCRIBES = `import { describe, test } from "bun:test";
describe("a", () => {
  test("x", () => {});
  describe("b", () => {
    test("y", () => {});
  });
});
`;

const ONE_TEST = `import { test } from "bun:test";
test("alone", () => {});
`;

let dir = "";
let files: BunJUnitFile[] = [];
let rawXml = "";

function runBunTest(cwd: string, relFiles: string[], outfile: string): number {
  const child = Bun.spawnSync({
    cmd: [
      process.execPath,
      "test",
      "--reporter=junit",
      `--reporter-outfile=${outfile}`,
      // Positional arguments are substring filters (docs/bun-behaviour.md): pass absolute paths.
      ...relFiles.map((f) => join(cwd, f)),
    ],
    cwd,
    stdout: "pipe",
    stderr: "pipe",
  });
  return child.exitCode ?? -1;
}

function byName(file: BunJUnitFile | undefined, name: string): TestResult {
  const found = file?.tests.find((t) => t.name === name);
  if (found === undefined) throw new Error(`no test named ${JSON.stringify(name)} in ${file?.file}`);
  return found;
}

beforeAll(() => {
  dir = realpathSync(tempDir("shardguard-bun-junit-"));
  mkdirSync(join(dir, "t", "sub"), { recursive: true });
  writeFileSync(join(dir, "t", "mixed.test.ts"), MIXED);
  writeFileSync(join(dir, "t", "sub", "describes.test.ts"), ONLY_DESCRIBES);
  writeFileSync(join(dir, "t", "one.test.ts"), ONE_TEST);
  const outfile = join(dir, "junit.xml");
  const exitCode = runBunTest(dir, ["t/mixed.test.ts", "t/sub/describes.test.ts", "t/one.test.ts"], outfile);
  expect(exitCode).toBe(1); // "fails" and "hostile" fail
  rawXml = readFileSync(outfile, "utf8");
  files = readBunJUnit(rawXml);
}, 30_000);

afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

describe("readBunJUnit on real bun test output", () => {
  test("one entry per file, paths relative to the child's cwd", () => {
    expect(files.map((f) => f.file).sort()).toEqual(["t/mixed.test.ts", "t/one.test.ts", "t/sub/describes.test.ts"]);
    for (const f of files) for (const t of f.tests) expect(t.file).toBe(f.file);
  });

  test("describe paths come from the nesting, in definition order", () => {
    const mixed = files.find((f) => f.file === "t/mixed.test.ts");
    expect(mixed?.tests.map((t) => t.name)).toEqual([
      "first",
      "outer > inner > passes",
      "outer > slow",
      "fails",
      "is skipped",
      "is todo",
      "hostile",
      "last",
    ]);
    const describes = files.find((f) => f.file === "t/sub/describes.test.ts");
    expect(describes?.tests.map((t) => t.name)).toEqual(["a > x", "a > b > y"]);
    const one = files.find((f) => f.file === "t/one.test.ts");
    expect(one?.tests.map((t) => [t.name, t.status])).toEqual([["alone", "passed"]]);
  });

  test("statuses passed / failed / skipped / todo", () => {
    const mixed = files.find((f) => f.file === "t/mixed.test.ts");
    expect(mixed?.tests.map((t) => t.status)).toEqual([
      "passed",
      "passed",
      "passed",
      "failed",
      "skipped",
      "todo",
      "failed",
      "passed",
    ]);
    for (const t of mixed?.tests ?? []) {
      expect(t.failure !== undefined).toBe(t.status === "failed");
      // Bun's JUnit has no retry data.
      expect([t.retries, t.flaky, t.attemptFailures, t.synthetic]).toEqual([0, false, [], false]);
    }
  });

  test("failure type, message and details", () => {
    const mixed = files.find((f) => f.file === "t/mixed.test.ts");
    const fails = byName(mixed, "fails");
    expect([fails.failure?.type, fails.failure?.errorName]).toEqual(["failure", "AssertionError"]);
    expect(fails.failure?.message).toContain("Expected: 2");
    expect(fails.failure?.message).toContain("Received: 1");
    // Numeric character references (&#10;) are decoded.
    expect(fails.failure?.message).toContain("\n");
    expect(fails.failure?.details).toContain("t/mixed.test.ts:9");

    const hostile = byName(mixed, "hostile");
    expect([hostile.failure?.type, hostile.failure?.errorName]).toEqual(["failure", "TypeError"]);
    expect(hostile.failure?.message).toContain("<&> ]]> \u{1F600}");
  });

  test("line numbers and durations", () => {
    const mixed = files.find((f) => f.file === "t/mixed.test.ts");
    expect(byName(mixed, "first").line).toBe(2);
    expect(byName(mixed, "outer > inner > passes").line).toBe(5);
    expect(byName(mixed, "fails").line).toBe(9);
    expect(byName(mixed, "last").line).toBe(13);
    const slow = byName(mixed, "outer > slow").durationMs;
    expect(slow).toBeGreaterThanOrEqual(50);
    expect(slow).toBeLessThan(10_000);
    expect(byName(mixed, "is todo").durationMs).toBe(0);
    for (const t of mixed?.tests ?? []) expect(Number.isFinite(t.durationMs) && t.durationMs >= 0).toBe(true);
  });

  test("a truncated file is a BunJUnitParseError with a one-line message", () => {
    const truncated = rawXml.slice(0, Math.floor(rawXml.length / 2));
    let caught: unknown;
    try {
      readBunJUnit(truncated);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BunJUnitParseError);
    expect((caught as Error).message).not.toContain("\n");
  });
});

describe("readBunJUnit on hand-written input", () => {
  test("control characters and escape sequences survive parsing", () => {
    const xml = `<?xml version="1.0"?>
<testsuites><testsuite name="x.test.ts" file="x.test.ts">
  <testcase name="c&#27;[1mbold" time="0.5" line="7"><failure type="Error" message="a&#x1b;[31mb&#0;\u0001c">body&#27;[0m&#10;\u0007end &amp;amp;</failure></testcase>
</testsuite></testsuites>`;
    const [file] = readBunJUnit(xml);
    const [t] = file?.tests ?? [];
    expect(t?.name).toBe("c\x1b[1mbold");
    expect(t?.durationMs).toBe(500);
    expect(t?.line).toBe(7);
    expect(t?.failure).toEqual({
      type: "failure",
      errorName: "Error",
      message: "a\x1b[31mb\x00\x01c",
      details: "body\x1b[0m\n\x07end &amp;",
    });
  });

  test(
    "Bun's failure type is the error's name, never a failure " +
      "kind: an error named like one of ours stays a failure",
    () => {
      // Bun 1.4.4 writes `type` = the thrown error's `name`, which a test
      // sets (class E extends Error { name = "crash" }).
      const xml = `<testsuites><testsuite name="k.test.ts" file="k.test.ts">
  <testcase name="forged" time="0.1" line="3"><failure type="crash" message="y">crash: y</failure></testcase>
  <testcase name="timeout" time="0.1" line="4"><failure type="timeout" message="z"/></testcase>
</testsuite></testsuites>`;
      const [file] = readBunJUnit(xml);
      expect(file!.tests.map((t) => [t.status, t.failure])).toEqual([
        ["failed", { type: "failure", errorName: "crash", message: "y", details: "crash: y" }],
        ["failed", { type: "failure", errorName: "timeout", message: "z" }],
      ]);
    },
  );

  test("<error> counts as failed; a file with no tests and an empty run are fine", () => {
    const xml = `<testsuites>
  <testsuite name="e.test.ts"><testcase name="boom"><error message="load failed"/></testcase></testsuite>
  <testsuite name="empty.test.ts"/>
</testsuites>`;
    expect(readBunJUnit(xml)).toEqual([
      {
        file: "e.test.ts",
        tests: [
          {
            name: "boom",
            file: "e.test.ts",
            status: "failed",
            durationMs: 0,
            failure: { type: "failure", message: "load failed" },
            retries: 0,
            flaky: false,
            attemptFailures: [],
            synthetic: false,
          },
        ],
      },
      { file: "empty.test.ts", tests: [] },
    ]);
    expect(readBunJUnit(`<testsuites name="bun test" tests="0"/>`)).toEqual([]);
  });

  test("backslashes in paths become forward slashes", () => {
    const [file] = readBunJUnit(
      `<testsuites><testsuite name="t\\w.test.ts" file="t\\w.test.ts"><testcase name="a"/></testsuite></testsuites>`,
    );
    expect(file?.file).toBe("t/w.test.ts");
    expect(file?.tests[0]?.file).toBe("t/w.test.ts");
  });

  test.each([
    ["mismatched tags", "<testsuites><testsuite></testsuites>"],
    ["empty text", ""],
    ["not XML", "Segmentation fault"],
    ["wrong root", "<testsuite name='a'/>"],
    ["two roots", "<testsuites/><testsuites/>"],
    [
      "a repeated attribute",
      `<testsuites><testsuite name="a" file="a"><testcase name="x" name="y"/></testsuite></testsuites>`,
    ],
    ["a repeated attribute named __proto__", `<testsuites __proto__="a" __proto__="b"/>`],
    [
      "a < inside a value",
      `<testsuites><testsuite name="a" file="a"><testcase name="x<y" line="1"/></testsuite></testsuites>`,
    ],
    ["a < inside a value, no < after the tag", `<testsuites name="a<b">`],
    ["an unquoted value", `<testsuites><testsuite name=a/></testsuites>`],
    ["an unterminated value", `<testsuites name="a/>`],
    ["a value without a name", `<testsuites ="a"/>`],
    ["attributes without space between", `<testsuites a="1"b="2"/>`],
    ["a bad element name", `<testsuites><1testsuite/></testsuites>`],
    ["a slash inside a start tag", `<testsuites><testsuite name="a" / ></testsuites>`],
    ["a slash in an element name", `<testsuites><a/b></testsuites>`],
    ["a quote in an element name", `<testsuites><a"b c="1"/></testsuites>`],
    ["a start tag cut at the end", `<testsuites><testsuite name="a"`],
    ["a < between attributes", `<testsuites><testsuite name="a" <b/></testsuites>`],
    ["a second root after a well-formed one", `<testsuites></testsuites>\n<testsuites name="b"/>`],
    [
      "a bad element name after good ones",
      `<testsuites><testsuite name="a"/><testsuite- name="b"/><testsuite.x/></testsuites>`.replace(
        "testsuite-",
        "-testsuite",
      ),
    ],
  ])("%s → BunJUnitParseError", (_label, xml) => {
    expect(() => readBunJUnit(xml)).toThrow(BunJUnitParseError);
  });

  test("whitespace of any kind between attributes and before the end; self-closing with space before />", () => {
    const [file] = readBunJUnit(
      `<testsuites>\n<testsuite\tname="a.test.ts"\r\nfile="a.test.ts"\u00a0><testcase name="x" line="1" /><testcase\nname="y"\n/></testsuite></testsuites>`,
    );
    expect(file?.tests.map((t) => t.name)).toEqual(["x", "y"]);
  });

  test("attribute values: either quote, the other quote and > inside, names that start alike", () => {
    const [file] = readBunJUnit(
      `<testsuites><testsuite name='a.test.ts' file="a.test.ts"><testcase name='say "hi" > 1' time="0.5" ` +
        `line='3' linex="9"/><testcase names="n" name="it's" timex="1" time = "0.25" /></testsuite></testsuites>`,
    );
    expect(file?.file).toBe("a.test.ts");
    expect(file?.tests.map((t) => [t.name, t.line, t.durationMs])).toEqual([
      ['say "hi" > 1', 3, 500],
      ["it's", undefined, 250],
    ]);
  });
});

describe("Bun's testcase tag read by its own pattern", () => {
  // Bun 1.4.4 writes a test's start tag in one exact form, which the XML
  // reader matches whole (results/xml-scan.ts, bunTestcaseTag); the same
  // tags with two spaces between attributes go the general way.
  const values = [
    "t0",
    "",
    "a &gt; b",
    "say &quot;hi&quot; > 1",
    "x&#10;y &amp; z",
    "\u00e9\u{1F600}",
    "it's",
    "(unnamed)",
  ];
  const tags = values.flatMap((name, i) => [
    `<testcase name="${name}" classname="" time="0.00${i}" file="t/a.test.ts" line="${i + 1}" assertions="1" />`,
    `<testcase name="${name}" classname="c" time="${i}" file="t/a.test.ts" line="x${i}" assertions="0"/>`,
    `<testcase name="${name}" classname="" time="0.1" file="t/b.test.ts" line="${i}" ` +
      `assertions="2"><failure type="Error" message="m${i}">d&amp;${i}</failure></testcase>`,
    `<testcase name="${name}" classname="" time="0.1" file="t/a.test.ts" ` +
      `line="${i}" assertions="2"><skipped message="TODO"/></testcase>`,
    // Other shapes: a missing attribute, another order, a single quote.
    `<testcase name="${name}" classname="" time="0.2" file="t/a.test.ts" assertions="0" />`,
    `<testcase classname="" name="${name}" time="0.3" file="t/a.test.ts" line="4" assertions="0" />`,
  ]);
  const doc = (spaced: boolean) => {
    const body = tags.map((t) => (spaced ? t.replaceAll('" ', '"  ') : t)).join("\n    ");
    return (
      `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bun test">\n` +
      `  <testsuite name="t/a.test.ts" file="t/a.test.ts">\n    ${body}\n  </testsuite>\n</testsuites>\n`
    );
  };

  test("gives what the general reading of the same tags gives", () => {
    const fast = readBunJUnit(doc(false));
    expect(readBunJUnit(doc(true))).toEqual(fast);
    const tests = fast[0]!.tests;
    expect(tests).toHaveLength(tags.length);
    expect(tests.map((t) => t.name).slice(0, 6)).toEqual(["t0", "t0", "t0", "t0", "t0", "t0"]);
    expect(tests[2 * 6 + 0]).toMatchObject({ name: "a > b", line: 3, durationMs: 2 });
    expect(tests[3 * 6 + 0]!.name).toBe('say "hi" > 1');
    expect(tests[4 * 6 + 2]).toMatchObject({
      name: "x\ny & z",
      status: "failed",
      failure: { type: "failure", errorName: "Error", message: "m4", details: "d&4" },
    });
    expect(tests[1 * 6 + 3]).toMatchObject({ name: "", status: "todo" });
    expect(tests[1]!.line).toBeUndefined();
  });

  test.each([
    [
      "a < inside a value",
      `<testcase name="a<b" classname="" time="0.1" file="t/a.test.ts" line="1" assertions="1" />`,
    ],
    [
      "a repeated attribute after the pattern's six",
      `<testcase name="a" classname="" time="0.1" file="t/a.test.ts" line="1" assertions="1" name="b" />`,
    ],
    ["an unclosed testcase", `<testcase name="a" classname="" time="0.1" file="t/a.test.ts" line="1" assertions="1">`],
  ])("%s → BunJUnitParseError, as the general reading says", (_label, tag) => {
    const xml = `<testsuites><testsuite name="t/a.test.ts" file="t/a.test.ts">${tag}</testsuite></testsuites>`;
    expect(() => readBunJUnit(xml)).toThrow(BunJUnitParseError);
    expect(() => readBunJUnit(xml.replaceAll('" ', '"  '))).toThrow(BunJUnitParseError);
  });
});
