/**
 * A test's name is cleaned the same way on every path: from Bun's JUnit
 * (events off), from events joined to Bun's JUnit (events on), and from
 * events alone (a killed shard). Bun's JUnit drops C0 control characters
 * except tab, line feed and carriage return; the other paths must too.
 * Real CLI, real `bun test` children, fixture files in temp directories.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { cleanEventName, cleanJUnitName, stripAnsi } from "../runner/results/text.ts";
import { makeSuite, runCli } from "./helpers/cli.ts";

const NAME_SOURCE = String.raw`"a\x00b\x07c\td\x1b[31mred\x1b[0m\x0be\x1ff"`;
const CLEAN = "abc\tdredef";

const suite = (spin: boolean) => ({
  "names.test.ts": `import { test } from "bun:test";
test(${NAME_SOURCE}, () => {});
${spin ? 'test("spin", () => { while (true) {} });' : ""}
`,
});

/** Names of the real (non-synthetic) tests in report.json and ctrf.json. */
function names(dir: string): { json: string[]; ctrf: string[] } {
  const out = path.join(dir, ".shardguard");
  const report = JSON.parse(readFileSync(path.join(out, "report.json"), "utf8"));
  const ctrf = JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8"));
  return {
    json: report.shards.flatMap((s: { tests: { name: string }[] }) => s.tests.map((t) => t.name)),
    ctrf: ctrf.results.tests.map((t: { name: string }) => t.name),
  };
}

describe("names with control characters", () => {
  for (const [label, args, spin] of [
    ["events on, normal end", [], false],
    ["events off, normal end", ["--no-test-events"], false],
    ["events on, killed shard", ["--timeout", "2", "--grace", "0.5"], true],
  ] as const) {
    test(`${label}: report.json and ctrf.json name the test the same, without \\x00, \\x07, \\x0b, \\x1f or colour codes`, async () => {
      const dir = makeSuite(suite(spin));
      const run = await runCli(["run", "--root", dir, ...args]);
      expect(run.code).toBe(spin ? 1 : 0);
      const { json, ctrf } = names(dir);
      expect(json[0]).toBe(CLEAN);
      expect(ctrf[0]).toBe(CLEAN);
    });
  }
});

describe("cleanEventName and cleanJUnitName skip names that need no cleaning", () => {
  // The replaces written out as they were before the skip: the skip must
  // never change a name, whichever characters it holds.
  const slowEvent = (name: string) => stripAnsi(name).replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, "");
  const slowJUnit = (name: string) =>
    stripAnsi(name)
      .replace(/\[(?:\d{1,3}(?:;\d{1,3})*)?m/g, "")
      .replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, "");
  const alphabet = ["a", "1", ";", "m", "[", "]", "\x1b", "\x9b", "\x07", "\x00", "\t", "\n", "\x7f", "\x9c", "P", "\\", "é", "😀"];

  test("the same result as the replaces on every name of a varied set", () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let changed = 0;
    for (let i = 0; i < 20_000; i++) {
      const length = Math.floor(next() * 12);
      let name = "";
      for (let j = 0; j < length; j++) name += alphabet[Math.floor(next() * alphabet.length)];
      expect(cleanEventName(name)).toBe(slowEvent(name));
      expect(cleanJUnitName(name)).toBe(slowJUnit(name));
      if (cleanJUnitName(name) !== name) changed++;
    }
    // The set exercises the replaces, not only the skip.
    expect(changed).toBeGreaterThan(1_000);
    expect(cleanJUnitName("t [31mred[0m")).toBe("t red");
    expect(cleanEventName("plain name > t1")).toBe("plain name > t1");
  });
});
