/**
 * Evidence past the runner's bounds still gives every test its right value
 * in report.json, ctrf.json and junit.xml: a `found` frame over 32 MiB (a
 * 40 MiB test name), thousands of large error events, a Bun JUnit over its
 * read limit. Real CLI, real `bun test` children, side by side.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeSuite, readReport, removeSuites, runCli, type CliRun } from "./helpers/cli.ts";
import { threeReports } from "./helpers/three-reports.ts";

afterAll(removeSuites);

const HUGE_NAME = `import { expect, test } from "bun:test";
test("before passes", () => {});
test("H".repeat(40 * 1024 * 1024), () => { expect(1).toBe(2); });
test("then the thread spins", () => { while (true) {} });
test("after never runs", () => {});
`;

describe("bounds of the evidence", () => {
  const dirs = {
    hugeName: makeSuite({ "huge-name.test.ts": HUGE_NAME }),
  };
  const runs: Partial<Record<keyof typeof dirs, CliRun>> = {};

  beforeAll(async () => {
    const [hugeName] = await Promise.all([runCli(["run", "--root", dirs.hugeName, "--timeout", "8", "--grace", "1"])]);
    Object.assign(runs, { hugeName });
  }, 60_000);

  test("a failing test with a 40 MiB name, then a spin: it is failed (its name cut to its tail) in all three reports", async () => {
    expect(runs.hugeName!.code).toBe(1);
    const reports = await threeReports(dirs.hugeName);
    for (const shown of Object.values(reports)) {
      expect(shown.map((t) => t.status)).toEqual(["passed", "failed", "timed-out", "never-started"]);
      expect(shown[0]!.name).toBe("before passes");
      // fast-xml-parser leaves JUnit's "&#10;" as it is. Checked as a boolean: a failure must not print 64 KiB.
      const cut = /^\[shardguard: first \d+ bytes cut; full text in the shard log\](\n|&#10;)H{60000,}$/.test(shown[1]!.name);
      expect([shown[1]!.name.slice(0, 70), cut]).toEqual(["[shardguard: first 41877504 bytes cut; full text in the shard log]" + shown[1]!.name.slice(66, 70), true]);
      expect(shown[1]!.message).toContain("Expected: 2");
    }
    const shard = readReport(dirs.hugeName).shards[0]!;
    expect(Buffer.byteLength(shard.tests[1]!.name)).toBeLessThanOrEqual(64 * 1024 + 100);
    expect([shard.status, shard.notes]).toEqual(["timed-out", undefined]);
  });
});
