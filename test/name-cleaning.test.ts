/**
 * A test's name keeps every character the test wrote, on every path that
 * knows it: from events joined to Bun's JUnit (events on), and from events
 * alone (a killed shard). The control characters Bun 1.4's JUnit drops (NUL,
 * BEL, VT, ESC, …) are shown as their control pictures instead of vanishing,
 * so two names that differ only in them, or in a colour code, stay two
 * names. Without events Bun 1.4's JUnit has already dropped them: what it
 * kept is shown as it is. Real CLI, real `bun test` children, fixture files
 * in temp directories.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { cleanEventName, cleanJUnitName } from "../runner/results/text.ts";
import { makeSuite, runCli } from "./helpers/cli.ts";
import { parseJUnit } from "./helpers/junit-xml.ts";

const NAME_SOURCE = String.raw`"a\x00b\x07c\td\x1b[31mred\x1b[0m\x0be\x1ff\x7f"`;
/** With events: each control Bun's JUnit drops as its picture; tab and DEL as they are. */
const SHOWN = "a\u2400b\u2407c\td\u241b[31mred\u241b[0m\u240be\u241ff\x7f";
/** Bun 1.4.4's JUnit (events off): the controls dropped, the rest of the colour codes kept. */
const FROM_BUN_JUNIT = "abc\td[31mred[0mef\x7f";

const suite = (spin: boolean) => ({
  "names.test.ts": `import { test } from "bun:test";
test(${NAME_SOURCE}, () => {});
${spin ? 'test("spin", () => { while (true) {} });' : ""}
`,
});

/** Names of the real (non-synthetic) tests in report.json, ctrf.json and junit.xml. */
function names(dir: string): { json: string[]; ctrf: string[]; junit: string[] } {
  const out = path.join(dir, ".shardguard");
  const report = JSON.parse(readFileSync(path.join(out, "report.json"), "utf8"));
  const ctrf = JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8"));
  const xml = parseJUnit(readFileSync(path.join(out, "junit.xml"), "utf8"), { htmlEntities: true });
  return {
    json: report.shards.flatMap((s: { tests: { name: string }[] }) => s.tests.map((t) => t.name)),
    ctrf: ctrf.results.tests.map((t: { name: string }) => t.name),
    junit: xml.testsuites.testsuite.flatMap((s: { testcase: Record<string, string>[] }) =>
      s.testcase.map((c) => c["@_name"]),
    ),
  };
}

describe("names with control characters", () => {
  for (const [label, args, spin, want] of [
    ["events on, normal end", [], false, SHOWN],
    ["events on, killed shard", ["--timeout", "2", "--grace", "0.5"], true, SHOWN],
    ["events off, normal end (Bun 1.4's JUnit dropped them)", ["--no-test-events"], false, FROM_BUN_JUNIT],
  ] as const) {
    test(`${label}: report.json, ctrf.json and junit.xml ` +
      `name the test the same, nothing dropped silently`, async () => {
      const dir = makeSuite(suite(spin));
      const run = await runCli(["run", "--root", dir, ...args]);
      expect(run.code).toBe(spin ? 1 : 0);
      const { json, ctrf, junit } = names(dir);
      expect([json[0], ctrf[0], junit[0]]).toEqual([want, want, want]);
    }, 30_000);
  }
});

describe("names that differ only by escape sequences or control characters", () => {
  const files = {
    "twins.test.ts": `import { expect, test } from "bun:test";
test("red", () => {});
test("\\x1b[31mred\\x1b[0m", () => { expect(1).toBe(2); });
test("a\\x00b", () => {});
test("ab", () => { expect(1).toBe(2); });
`,
  };
  for (const args of [[], ["--no-test-events"]] as const) {
    const events = args.length === 0;
    test(`stay distinct in every report (events ${events ? "on" : "off"}), each with its own status`, async () => {
      const dir = makeSuite(files);
      const run = await runCli(["run", "--root", dir, ...args]);
      expect(run.code).toBe(1);
      const report = JSON.parse(readFileSync(path.join(dir, ".shardguard", "report.json"), "utf8"));
      const tests = report.shards[0].tests.map((t: { name: string; status: string }) => [t.name, t.status]);
      // Without events Bun 1.4's JUnit has dropped ESC and NUL: only what it kept tells the names apart.
      const colour = events ? "\u241b[31mred\u241b[0m" : "[31mred[0m";
      const nul = events ? "a\u2400b" : "ab";
      expect(tests).toEqual([
        ["red", "passed"],
        [colour, "failed"],
        [nul, "passed"],
        ["ab", "failed"],
      ]);
      const { ctrf, junit } = names(dir);
      expect(ctrf).toEqual(tests.map(([name]: [string]) => name));
      // JUnit makes names unique within a suite; with events nothing needed that.
      expect(junit).toEqual(events ? tests.map(([name]: [string]) => name) : ["red", colour, "ab", "ab (2)"]);
    }, 30_000);
  }
});

describe("cleanEventName and cleanJUnitName", () => {
  test("show each control character Bun's JUnit drops as its control picture and keep everything else", () => {
    const table: [string, string][] = [
      ["plain name > t1", "plain name > t1"],
      ["nul\x00", "nul\u2400"],
      ["\x01\x08", "\u2401\u2408"],
      ["vt\x0b ff\x0c", "vt\u240b ff\u240c"],
      ["\x1b[31mred\x1b[0m", "\u241b[31mred\u241b[0m"],
      ["\x1f", "\u241f"],
      // Bun's JUnit keeps these: so do the reports (each renderer shows or escapes them itself).
      ["tab\tlf\ncr\rdel\x7f", "tab\tlf\ncr\rdel\x7f"],
      ["nel\u0085 ls\u2028 csi\x9b", "nel\u0085 ls\u2028 csi\x9b"],
      ["[31mred[0m", "[31mred[0m"],
    ];
    for (const [name, shown] of table) {
      expect([name, cleanEventName(name)]).toEqual([name, shown]);
      expect([name, cleanJUnitName(name)]).toEqual([name, shown]);
    }
    // Every code point below U+0020 but tab, LF and CR becomes U+2400 + its code.
    for (let code = 0; code < 0x20; code++) {
      const c = String.fromCharCode(code);
      expect(cleanEventName(c)).toBe(c === "\t" || c === "\n" || c === "\r" ? c : String.fromCharCode(0x2400 + code));
    }
  });
});
