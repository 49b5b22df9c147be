/**
 * renderJUnit: every status, hostile text, counts, and validity against the
 * committed JUnit XSD (through libxml2, see helpers/xsd.ts).
 */
import { describe, expect, test } from "bun:test";
import { parseJUnit } from "./helpers/junit-xml.ts";
import type { RunReport } from "../runner/results/report-model.ts";
import { formatSeconds, renderJUnit, WHOLE_FILE_TESTCASE } from "../runner/report/junit.ts";
import { capText, escapeXmlAttr, escapeXmlText, replaceIllegalXmlChars, stripAnsi } from "../runner/report/sanitize.ts";
import { failedShard, makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";

/** With the `u` flag a surrogate pair is one code point, so this only matches unpaired halves. */
const LONE_SURROGATE = /\p{Cs}/u;
const ALL_C0 = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join("");
const LONG_NAME = "long-".repeat(1000);
const BIG_DETAILS = `\x1b[31mSTART\x1b[0m\n${"x".repeat(200_000)}\nEND-OF-DETAILS`;

const HOSTILE_NAMES = [
  "\x1b[31mred\x1b[0m name",
  `controls ${ALL_C0} end`,
  "cdata ]]> end",
  `markup <&>"' end`,
  "emoji \u{1F600}\u{1F680}",
  LONG_NAME,
  "lone \uD800 surrogate",
  "\x00",
  "\x01", // sanitizes to the same name as "\x00": must still be unique
];

/** A report exercising every status and the awkward cases. */
function fullReport(): RunReport {
  const a = "test/a.test.ts";
  return makeReport([
    makeShard({
      index: 1,
      status: "failed",
      exitCode: 1,
      reason: "1 test failed",
      files: [a, "test/b.test.ts"],
      tests: [
        makeTest({ name: "ok", file: a, line: 3, durationMs: 0.0001 }),
        makeTest({
          name: "outer > fails",
          file: a,
          status: "failed",
          line: 9,
          durationMs: 1e-7,
          failure: {
            type: "failure",
            errorName: "AssertionError",
            message: "\x1b[1mexpected\x1b[22m 1 to be 2\x07",
            details: BIG_DETAILS,
          },
        }),
        makeTest({ name: "skipped one", file: a, status: "skipped", durationMs: 0 }),
        makeTest({ name: "todo one", file: a, status: "todo", durationMs: 0 }),
        makeTest({
          name: "flaky one",
          file: a,
          retries: 2,
          flaky: true,
          attemptFailures: [
            { type: "failure", errorName: "Error", message: "attempt 1 \x1b[31mfailed\x1b[0m" },
            { type: "failure", errorName: "TimeoutError", message: "attempt 2 timed out" },
          ],
        }),
        makeTest({ name: "dup", file: a }),
        makeTest({ name: "dup", file: a }),
        makeTest({ name: "dup (2)", file: a }),
        makeTest({ name: "dup", file: a, line: undefined }),
        ...HOSTILE_NAMES.map((name) => makeTest({ name, file: "test/b.test.ts" })),
      ],
    }),
    makeShard({
      index: 2,
      status: "timed-out",
      exitCode: null,
      signal: "SIGKILL",
      killedBy: "timeout",
      reason: "killed after 1800 s wall-clock timeout",
      tests: [
        makeTest({ name: "before", file: "test/c.test.ts", durationMs: 123456789.123 }),
        makeTest({ name: "spins", file: "test/c.test.ts", status: "timed-out", durationMs: 1e20 }),
      ],
    }),
    makeShard({
      index: 3,
      status: "crashed",
      exitCode: 0,
      reason: "process.exit(0) before every planned file reported",
      testSource: "synthetic",
      tests: [
        makeTest({
          name: "(whole file)",
          file: "test/d.test.ts",
          status: "crashed",
          synthetic: true,
          line: undefined,
          failure: { type: "crash", message: "exited with code 0 before test/d.test.ts reported" },
        }),
      ],
    }),
    makeShard({
      index: 4,
      status: "never-started",
      exitCode: null,
      startedAt: null,
      logPath: null,
      durationMs: 0,
      reason: "run cancelled by SIGINT before this shard started",
      files: ["test/e.test.ts"],
      tests: [],
    }),
    makeShard({
      index: 5,
      status: "skipped-by-diff",
      startedAt: null,
      logPath: null,
      reason: "no changed file reaches this shard",
      files: ["test/f.test.ts"],
      tests: [],
    }),
    makeShard({
      index: 6,
      status: "skipped-by-diff",
      reason: "diff selection",
      tests: [makeTest({ name: "not selected", file: "test/h.test.ts", status: "skipped-by-diff" })],
    }),
    // The same file again, in another shard: still one suite.
    makeShard({ index: 7, tests: [makeTest({ name: "from shard 7", file: a })] }),
    makeShard({
      index: 8,
      status: "failed",
      exitCode: 1,
      reason: "test/g.test.ts has no tests",
      files: ["test/g.test.ts"],
    }),
  ]);
}

// failure, error and skipped are arrays too, so a test can count them.
const COUNTED = ["testsuite", "testcase", "failure", "error", "skipped", "flakyFailure"];

type El = Record<string, unknown>;
const list = (el: El, key: string): El[] => (Array.isArray(el[key]) ? (el[key] as El[]) : []);
const attr = (el: El, key: string): string | undefined => el[`@_${key}`] as string | undefined;

function parse(xml: string): { root: El; suites: El[] } {
  const root = (parseJUnit(xml, { htmlEntities: true, arrays: COUNTED }) as { testsuites: El }).testsuites;
  return { root, suites: list(root, "testsuite") };
}

describe("renderJUnit on a report with every status and hostile text", () => {
  const report = fullReport();
  const xml = renderJUnit(report);
  const { root, suites } = parse(xml);
  const suite = (name: string) => suites.find((s) => attr(s, "name") === name) as El;
  const testcase = (file: string, name: string) =>
    list(suite(file), "testcase").find((c) => attr(c, "name") === name) as El;

  test("validates against the JUnit XSD", async () => {
    const result = await validateJUnitXml(xml);
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  test("one flat suite per file, every suite non-empty", () => {
    expect(suites.map((s) => attr(s, "name"))).toEqual([
      "test/a.test.ts",
      "test/b.test.ts",
      "test/c.test.ts",
      "test/d.test.ts",
      "test/e.test.ts",
      "test/f.test.ts",
      "test/h.test.ts",
      "test/g.test.ts",
    ]);
    for (const s of suites) {
      expect(list(s, "testcase").length).toBeGreaterThan(0);
      expect(list(s, "testsuite")).toEqual([]);
      for (const c of list(s, "testcase")) {
        expect(attr(c, "classname")).toBe(attr(s, "name"));
        expect(attr(c, "file")).toBe(attr(s, "name"));
      }
    }
    // The file from shards 1 and 7 is merged.
    expect(testcase("test/a.test.ts", "from shard 7")).toBeDefined();
  });

  test("suite and root counts equal the elements written", () => {
    const totals = { tests: 0, failures: 0, errors: 0, skipped: 0 };
    for (const s of suites) {
      const cases = list(s, "testcase");
      const count = (tag: string) => cases.reduce((n, c) => n + list(c, tag).length, 0);
      const counts = {
        tests: cases.length,
        failures: count("failure"),
        errors: count("error"),
        skipped: count("skipped"),
      };
      expect({
        tests: Number(attr(s, "tests")),
        failures: Number(attr(s, "failures")),
        errors: Number(attr(s, "errors")),
        skipped: Number(attr(s, "skipped")),
      }).toEqual(counts);
      for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += counts[k];
    }
    expect({
      tests: Number(attr(root, "tests")),
      failures: Number(attr(root, "failures")),
      errors: Number(attr(root, "errors")),
      skipped: Number(attr(root, "skipped")),
    }).toEqual(totals);
    // Every test entry plus one stand-in for each of e, f and g.
    expect(totals.tests).toBe(report.summary.tests.total + 3);
    expect(totals).toEqual({ tests: totals.tests, failures: 2, errors: 3, skipped: 4 });
  });

  test("never skipped together with failure or error", () => {
    for (const s of suites) {
      for (const c of list(s, "testcase")) {
        const bad = list(c, "skipped").length > 0 && list(c, "failure").length + list(c, "error").length > 0;
        expect(bad).toBe(false);
      }
    }
  });

  test("each status maps to the element and type of the status table in docs/reports.md", () => {
    const kinds = (file: string, name: string) => {
      const c = testcase(file, name);
      return COUNTED.slice(2).flatMap((tag) => list(c, tag).map((el) => `${tag}:${attr(el, "type") ?? ""}`));
    };
    expect(kinds("test/a.test.ts", "ok")).toEqual([]);
    expect(kinds("test/a.test.ts", "outer > fails")).toEqual(["failure:AssertionError"]);
    expect(kinds("test/a.test.ts", "skipped one")).toEqual(["skipped:"]);
    expect(kinds("test/a.test.ts", "todo one")).toEqual(["skipped:todo"]);
    expect(kinds("test/a.test.ts", "flaky one")).toEqual(["flakyFailure:Error", "flakyFailure:TimeoutError"]);
    expect(kinds("test/c.test.ts", "spins")).toEqual(["error:timeout"]);
    expect(kinds("test/d.test.ts", "(whole file)")).toEqual(["error:crash"]);
    expect(kinds("test/e.test.ts", WHOLE_FILE_TESTCASE)).toEqual(["error:never-started"]);
    expect(kinds("test/f.test.ts", WHOLE_FILE_TESTCASE)).toEqual(["skipped:skipped-by-diff"]);
    expect(kinds("test/h.test.ts", "not selected")).toEqual(["skipped:skipped-by-diff"]);
    expect(kinds("test/g.test.ts", WHOLE_FILE_TESTCASE)).toEqual(["failure:no-tests"]);

    const msg = (file: string, name: string, tag: string) => attr(list(testcase(file, name), tag)[0] as El, "message");
    expect(msg("test/c.test.ts", "spins", "error")).toBe("killed after 1800 s wall-clock timeout");
    expect(msg("test/e.test.ts", WHOLE_FILE_TESTCASE, "error")).toBe(
      "run cancelled by SIGINT before this shard started",
    );
    expect(msg("test/f.test.ts", WHOLE_FILE_TESTCASE, "skipped")).toBe("no changed file reaches this shard");
    expect(msg("test/a.test.ts", "outer > fails", "failure")).toBe("expected 1 to be 2\uFFFD");
    const flaky = list(testcase("test/a.test.ts", "flaky one"), "flakyFailure").map((f) => attr(f, "message"));
    expect(flaky).toEqual(["attempt 1 failed", "attempt 2 timed out"]);
  });

  test("names are sanitized, kept otherwise, and unique per suite", () => {
    const names = (file: string) => list(suite(file), "testcase").map((c) => attr(c, "name"));
    expect(names("test/a.test.ts").filter((n) => n?.startsWith("dup"))).toEqual([
      "dup",
      "dup (3)",
      "dup (2)",
      "dup (4)",
    ]);
    const expected = [
      "red name",
      // ESC (0x1b) is removed with the escape sequences; the other controls are replaced.
      `controls ${"\uFFFD".repeat(9)}\t\n${"\uFFFD".repeat(2)}\r${"\uFFFD".repeat(13 + 4)} end`,
      "cdata ]]> end",
      `markup <&>"' end`,
      "emoji \u{1F600}\u{1F680}",
      LONG_NAME,
      "lone \uFFFD surrogate",
      "\uFFFD",
      "\uFFFD (2)",
    ];
    expect(names("test/b.test.ts")).toEqual(expected);
    for (const s of suites) {
      const all = list(s, "testcase").map((c) => `${attr(c, "classname")}\u0000${attr(c, "name")}`);
      expect(new Set(all).size).toBe(all.length);
    }
  });

  test("no character XML 1.0 forbids, raw or as a reference; no literal ]]>", () => {
    expect(xml).not.toMatch(/[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/);
    expect(xml).not.toMatch(LONE_SURROGATE);
    for (const [, hex, dec] of xml.matchAll(/&#(?:x([0-9a-fA-F]+)|([0-9]+));/g)) {
      const cp = hex !== undefined ? parseInt(hex, 16) : Number(dec);
      expect([9, 10, 13].includes(cp) || cp >= 0x20).toBe(true);
    }
    expect(xml).not.toContain("]]>");
    expect(xml).not.toContain("\x1b");
  });

  test("times: 3 decimals, never NaN or exponent", () => {
    const times = [...xml.matchAll(/ time="([^"]*)"/g)].map((m) => m[1]);
    expect(times.length).toBe(1 + suites.length + Number(attr(root, "tests")));
    for (const t of times) expect(t).toMatch(/^[0-9]+\.[0-9]{3}$/);
    expect(attr(testcase("test/a.test.ts", "outer > fails"), "time")).toBe("0.000");
    expect(attr(testcase("test/c.test.ts", "before"), "time")).toBe("123456.789");
    expect(attr(suite("test/a.test.ts"), "time")).toBe("0.075"); // 6 × 12.5 ms + 0.0001 + 1e-7 + 2 × 0
  });

  test("failure details are capped, keep the tail and name the shard's log", () => {
    const details = list(testcase("test/a.test.ts", "outer > fails"), "failure")[0]?.["#text"] as string;
    expect(Buffer.byteLength(details)).toBeLessThanOrEqual(64 * 1024);
    expect(details).toStartWith("[shardguard: first ");
    expect(details).toContain("full log: .shardguard/logs/1.log");
    expect(details).toEndWith("END-OF-DETAILS");
    expect(details).not.toContain("START");

    const small = parse(renderJUnit(report, { maxOutputBytes: 300 }));
    const a = small.suites.find((s) => attr(s, "name") === "test/a.test.ts") as El;
    const fails = list(a, "testcase").find((c) => attr(c, "name") === "outer > fails") as El;
    const text = list(fails, "failure")[0]?.["#text"] as string;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(300);
    expect(text).toEndWith("END-OF-DETAILS");
  });

  test("line only when known; root carries the run's totals and time", () => {
    expect(attr(testcase("test/a.test.ts", "outer > fails"), "line")).toBe("9");
    expect(attr(testcase("test/a.test.ts", "dup (4)"), "line")).toBeUndefined();
    expect(attr(root, "name")).toBe("shardguard");
    expect(attr(root, "time")).toBe("60.000");
    expect(attr(root, "timestamp")).toBe(report.startedAt);
  });
});

describe("renderJUnit structure", () => {
  test("golden: a small report renders exactly", () => {
    const report = makeReport(
      [
        failedShard(1, [
          makeTest({ name: "a > works", file: "t/x.test.ts", line: 2, durationMs: 1.5 }),
          makeTest({
            name: "a > breaks",
            file: "t/x.test.ts",
            line: 3,
            durationMs: 2.25,
            status: "failed",
            failure: {
              type: "failure",
              errorName: "AssertionError",
              message: "expected 1\nto be 2",
              details: "at t/x.test.ts:3",
            },
          }),
        ]),
      ],
      { durationMs: 1234.5678 },
    );
    expect(renderJUnit(report)).toBe(
      [
        `<?xml version="1.0" encoding="UTF-8"?>`,
        `<testsuites name="shardguard" tests="2" failures="1" errors="0" skipped="0" time="1.235" ` +
          `timestamp="2025-01-02T03:04:00.000Z">`,
        `  <testsuite name="t/x.test.ts" tests="2" failures="1" errors="0" skipped="0" time="0.004" ` +
          `timestamp="2025-01-02T03:04:05.000Z" file="t/x.test.ts">`,
        `    <testcase name="a &gt; works" classname="t/x.test.ts" file="t/x.test.ts" line="2" time="0.002"/>`,
        `    <testcase name="a &gt; breaks" classname="t/x.test.ts" file="t/x.test.ts" line="3" time="0.002">`,
        `      <failure type="AssertionError" message="expected 1&#10;to be 2">at t/x.test.ts:3</failure>`,
        `    </testcase>`,
        `  </testsuite>`,
        `</testsuites>`,
        ``,
      ].join("\n"),
    );
  });

  test("an empty run is a valid document", async () => {
    const xml = renderJUnit(makeReport([]));
    expect(xml).toContain(`tests="0"`);
    expect(await validateJUnitXml(xml)).toEqual({ valid: true, errors: [] });
  });

  test("formatSeconds", () => {
    expect([0, 0.4, 0.5, 1, 1234.5678, NaN, Infinity, -1, 1e300].map(formatSeconds)).toEqual([
      "0.000",
      "0.000",
      "0.001",
      "0.001",
      "1.235",
      "0.000",
      "0.000",
      "0.000",
      "1000000000000.000",
    ]);
  });

  test("maxOutputBytes must be a non-negative integer", () => {
    expect(() => renderJUnit(makeReport([]), { maxOutputBytes: -1 })).toThrow(RangeError);
    expect(() => renderJUnit(makeReport([]), { maxOutputBytes: 1.5 })).toThrow(RangeError);
  });
});

describe("the XSD validator really rejects invalid JUnit", () => {
  const VALID = `<testsuites><testsuite name="s" tests="1" failures="0" errors="0" time="1.000"><testcase name="c"/></testsuite></testsuites>`;

  test("the valid baseline passes", async () => {
    expect(await validateJUnitXml(VALID)).toEqual({ valid: true, errors: [] });
  });

  test("testsuite without errors attribute", async () => {
    const result = await validateJUnitXml(VALID.replace(` errors="0"`, ""));
    expect(result.valid).toBe(false);
    expect(result.errors.join("\n")).toContain("'errors' is required");
  });

  test.each([["NaN"], ["1e-7"], ["-1.000"]])("suite time %s", async (time) => {
    const result = await validateJUnitXml(VALID.replace(`time="1.000"`, `time="${time}"`));
    expect(result.valid).toBe(false);
    expect(result.errors.join("\n")).toContain("[facet 'pattern']");
  });

  test("a control character, even as a character reference", async () => {
    const result = await validateJUnitXml(VALID.replace(`name="c"`, `name="c&#27;[31m"`));
    expect(result.valid).toBe(false);
    expect(result.errors.join("\n")).toContain("xmlParseCharRef");
  });

  test("skipped and failure are both allowed by the XSD (so the renderer must avoid it itself)", async () => {
    const both = VALID.replace(`<testcase name="c"/>`, `<testcase name="c"><skipped/><failure/></testcase>`);
    expect((await validateJUnitXml(both)).valid).toBe(true);
  });
});

describe("sanitize", () => {
  test.each([
    ["SGR colours", "\x1b[1;31mred\x1b[0m", "red"],
    ["cursor / erase", "a\x1b[2K\x1b[1Gb\x1b[?25l", "ab"],
    ["OSC 8 link, BEL and ST terminated", "\x1b]8;;https://e.x\x07link\x1b]8;;\x1b\\", "link"],
    ["unterminated OSC keeps the text after it", "\x1b]0;title rest", "0;title rest"],
    ["charset designation", "\x1b(Bplain", "plain"],
    ["8-bit CSI", "\x9b31mred", "red"],
    ["lone ESC at the end", "end\x1b", "end"],
    ["text without escapes", "[31m is just text", "[31m is just text"],
  ])("stripAnsi: %s", (_label, input, expected) => {
    expect(stripAnsi(input)).toBe(expected);
  });

  test("replaceIllegalXmlChars keeps exactly XML 1.0's Char production", () => {
    expect(replaceIllegalXmlChars("\t\n\r \x7f\uD7FF\uE000\uFFFD\u{10000}\u{10FFFF}\u{1F600}")).toBe(
      "\t\n\r \x7f\uD7FF\uE000\uFFFD\u{10000}\u{10FFFF}\u{1F600}",
    );
    expect(replaceIllegalXmlChars("a\x00b\x08c\x0bd\x1fe\uFFFEf\uFFFFg\uD800h\uDC00i")).toBe(
      "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf\uFFFDg\uFFFDh\uFFFDi",
    );
    // A high surrogate followed by a low one is a pair, not two lone halves; reversed they are two.
    expect(replaceIllegalXmlChars("\uDE00\uD83D")).toBe("\uFFFD\uFFFD");
  });

  test("escaping", () => {
    expect(escapeXmlText(`a<b>&c]]>"'\t\n\r`)).toBe(`a&lt;b&gt;&amp;c]]&gt;"'\t\n&#13;`);
    expect(escapeXmlAttr(`a<b>&c"'\t\n\r`)).toBe("a&lt;b&gt;&amp;c&quot;&apos;&#9;&#10;&#13;");
  });

  test("capText keeps the tail, reports the cut, never splits a code point", () => {
    expect(capText("short", 5, "full log: x.log")).toBe("short");
    const text = "\u{1F600}".repeat(100); // 400 bytes
    const capped = capText(text, 120, "full log: x.log");
    const [marker, tail = ""] = capped.split("\n");
    expect(Buffer.byteLength(capped)).toBeLessThanOrEqual(120);
    expect(capped).not.toMatch(LONE_SURROGATE);
    expect(tail).toMatch(/^(\u{1F600})+$/u);
    const cut = Number(/first (\d+) bytes cut; full log: x\.log\]$/.exec(marker ?? "")?.[1]);
    expect(cut + Buffer.byteLength(tail)).toBe(400);
    expect(capText(text, 10, "full log: x.log")).toBe("[shardguard: first 400 bytes cut; full log: x.log]\n");
    expect(() => capText(text, -1, "")).toThrow(RangeError);
  });
});
