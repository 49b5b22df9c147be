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

// 300 passing tests whose 80 KB names make Bun's JUnit larger than the read limit.
const LONG_NAMES = `import { test } from "bun:test";
for (let i = 0; i < 300; i++) test(\`\${i} \`.padEnd(80 * 1024, "n"), () => {});
`;

// 500 error events of 60 KB in one test, then a spin: only the first and last four are held.
const MANY_ERRORS = `import { test } from "bun:test";
test("rejects 500 promises", async () => {
  for (let i = 0; i < 500; i++) void Promise.reject(new Error(\`rejection \${i} \` + "x".repeat(60_000)));
  await Bun.sleep(100);
});
test("then the thread spins", () => { while (true) {} });
`;

describe("bounds of the evidence", () => {
  const dirs = {
    hugeName: makeSuite({ "huge-name.test.ts": HUGE_NAME }),
    longNames: makeSuite({ "long-names.test.ts": LONG_NAMES }),
    manyErrors: makeSuite({ "many-errors.test.ts": MANY_ERRORS }),
  };
  const runs: Partial<Record<keyof typeof dirs, CliRun>> = {};

  beforeAll(async () => {
    const [hugeName, longNames, manyErrors] = await Promise.all([
      runCli(["run", "--root", dirs.hugeName, "--timeout", "8", "--grace", "1"]),
      runCli(["run", "--root", dirs.longNames, "--timeout", "60"]),
      runCli(["run", "--root", dirs.manyErrors, "--timeout", "8", "--grace", "1"]),
    ]);
    Object.assign(runs, { hugeName, longNames, manyErrors });
  }, 60_000);

  test(
    "a failing test with a 40 MiB name, then a spin: it is " + "failed (its name cut to its tail) in all three reports",
    async () => {
      expect(runs.hugeName!.code).toBe(1);
      const reports = await threeReports(dirs.hugeName);
      for (const shown of Object.values(reports)) {
        expect(shown.map((t) => t.status)).toEqual(["passed", "failed", "timed-out", "never-started"]);
        expect(shown[0]!.name).toBe("before passes");
        // fast-xml-parser leaves JUnit's "&#10;" as it is. Checked as a boolean: a failure must not print 64 KiB.
        const cut = /^\[shardguard: first \d+ bytes cut; full text in the shard log\](\n|&#10;)H{60000,}$/.test(
          shown[1]!.name,
        );
        expect([shown[1]!.name.slice(0, 70), cut]).toEqual([
          `[shardguard: first 41877504 bytes cut; full text in the shard log]${shown[1]!.name.slice(66, 70)}`,
          true,
        ]);
        expect(shown[1]!.message).toContain("Expected: 2");
      }
      const shard = readReport(dirs.hugeName).shards[0]!;
      expect(Buffer.byteLength(shard.tests[1]!.name)).toBeLessThanOrEqual(64 * 1024 + 100);
      expect([shard.status, shard.notes]).toEqual(["timed-out", undefined]);
    },
  );

  test(
    "300 passing tests whose Bun JUnit is past the read limit: " +
      "failed to read it (the limit named), the events' 300 passes kept",
    async () => {
      expect(runs.longNames!.code).toBe(1);
      // 300 names of 64 KiB: a 20 MB junit.xml, past what the wasm validator can hold.
      const reports = await threeReports(dirs.longNames, false);
      for (const shown of Object.values(reports)) {
        expect(shown).toHaveLength(301);
        expect(shown.slice(0, 300).every((t) => t.status === "passed")).toBe(true);
        expect([shown[300]!.name, shown[300]!.status]).toEqual(["(Bun's JUnit report)", "failed"]);
        expect(shown[300]!.message).toContain("failed to read Bun's JUnit report: ");
        expect(shown[300]!.message).toContain("past the read limit (16.3 MiB: 16 MiB + 1 KiB per test started");
      }
      const shard = readReport(dirs.longNames).shards[0]!;
      expect(shard.status).toBe("failed");
      expect(shard.reason).toStartWith(
        "exited 0 after reaching the end of the run, but failed to read Bun's JUnit report: ",
      );
      expect(shard.tests[300]!.failure!.type).toBe("junit-unreadable");
    },
  );

  test(
    "500 error events of 60 KB in an ended test, then a spin: the test is " +
      "failed, not in flight; its text keeps the first and last errors and a count",
    async () => {
      expect(runs.manyErrors!.code).toBe(1);
      const reports = await threeReports(dirs.manyErrors);
      for (const shown of Object.values(reports)) {
        expect(shown.map((t) => [t.name, t.status])).toEqual([
          ["rejects 500 promises", "failed"],
          ["then the thread spins", "timed-out"],
        ]);
      }
      const shard = readReport(dirs.manyErrors).shards[0]!;
      const failure = shard.tests[0]!.failure!;
      // The report keeps the text's last 64 KiB: the last error whole.
      expect(failure.message).toContain("rejection 499 ");
      expect(failure.message).not.toContain("rejection 400 ");
      expect(shard.notes).toEqual([
        expect.stringMatching(
          /^\d+ error events left out of the failure texts \(the first and last 4 of each test attempt are kept, with a count\); the full text is in the shard log$/,
        ),
      ]);
      expect(Number(shard.notes![0]!.split(" ")[0])).toBeGreaterThanOrEqual(400);
    },
  );
});
