/**
 * A late uncaught error (a timer of one test throws while the next runs) is
 * blamed as plain `bun test` blames it: Bun's JUnit, the authority for a run
 * that ended normally, fails the test that was running. Every report must say
 * the same, with events on and off. Real CLI, real `bun test` children.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, runCli, shardOf } from "./helpers/cli.ts";
import { parseJUnit } from "./helpers/junit-xml.ts";

const LATE = `import { test } from "bun:test";
test("u1", async () => { setTimeout(() => { throw new Error("late boom"); }, 1); });
test("u2", async () => { await Bun.sleep(20); });
`;

describe("a late uncaught error", () => {
  for (const events of [true, false]) {
    test(
      `fails the test running when it arrives, in report.json, ` +
        `junit.xml and ctrf.json (events ${events ? "on" : "off"})`,
      async () => {
        const dir = makeSuite({ "late.test.ts": LATE });
        const run = await runCli(["run", "--root", dir, "--timeout", "30", ...(events ? [] : ["--no-test-events"])]);
        expect(run.code).toBe(1);
        const shard = shardOf(readReport(dir), "late.test.ts");
        expect(shard.status).toBe("failed");
        expect(shard.tests.map((t) => [t.name, t.status, t.failure?.message])).toEqual([
          ["u1", "passed", undefined],
          ["u2", "failed", "late boom"],
        ]);
        const ctrf = JSON.parse(readFileSync(path.join(dir, ".shardguard", "ctrf.json"), "utf8"));
        expect(
          ctrf.results.tests.map((t: { name: string; status: string; message?: string }) => [
            t.name,
            t.status,
            t.message,
          ]),
        ).toEqual([
          ["u1", "passed", undefined],
          ["u2", "failed", "late boom"],
        ]);
        const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
        const doc = parseJUnit(xml);
        const cases = doc.testsuites.testsuite.flatMap((s: { testcase: unknown[] }) => s.testcase) as Record<
          string,
          unknown
        >[];
        expect(
          cases.map((c) => [c["@_name"], c.failure ? (c.failure as Record<string, string>)["@_message"] : null]),
        ).toEqual([
          ["u1", null],
          ["u2", "late boom"],
        ]);
      },
    );
  }
});
