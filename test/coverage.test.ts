/**
 * A project's own coverage settings under shardguard (issue 25, item 7):
 * the child preload never appears in the project's coverage table nor
 * counts toward its threshold, and a threshold that is not met is named
 * as such in the shard's reason, from the exit code, the tests' statuses
 * and the project's settings (exec/coverage.ts), never from the table.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli, shardOf } from "./helpers/cli.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";
import { parseJUnit } from "./helpers/junit-xml.ts";

afterAll(removeSuites);

const BUNFIG = "[test]\ncoverage = true\ncoverageThreshold = 0.9\n";
const COVERED = {
  "src/math.ts":
    "export function add(a: number, b: number): number {\n  return a + b;\n" +
    "}\n\nexport function twice(a: number): number {\n  return add(a, a);\n}\n",
  "test/math.test.ts":
    'import { describe, expect, test } from "bun:test";\nimport { add, twice } from "../src/math.ts";\n' +
    'describe("math", () => {\n' +
    '  test.each([[1, 2, 3], [2, 2, 4]])("add(%d, %d)", (a, b, sum) => { expect(add(a, b)).toBe(sum); });\n' +
    '  test("twice", () => { expect(twice(4)).toBe(8); });\n});\n',
};
const HALF = {
  "src/half.ts":
    "export function used(): number {\n  return 1;\n}\n\nexport function unused(): number {\n  return 2;\n}\n",
  "test/half.test.ts":
    'import { expect, test } from "bun:test";\nimport { used } from "../src/half.ts";\n' +
    'test("uses half", () => { expect(used()).toBe(1); });\n',
};

function reports(dir: string) {
  const out = path.join(dir, ".shardguard");
  const xml = readFileSync(path.join(out, "junit.xml"), "utf8");
  // fast-xml-parser's output, read field by field.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  type Case = Record<string, any>;
  const cases = parseJUnit(xml).testsuites.testsuite.flatMap((s: { testcase: Case[] }) => s.testcase) as Case[];
  const ctrf = JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8"));
  return { xml, cases, ctrf, report: readReport(dir) };
}

/** The text of the shard logs of the newest run: what Bun printed, coverage table included. */
function logs(dir: string): string {
  const runs = path.join(dir, ".shardguard", "runs");
  const run = readdirSync(runs).sort().pop()!;
  const logDir = path.join(runs, run, "logs");
  return readdirSync(logDir)
    .filter((f) => f.endsWith(".log"))
    .map((f) => readFileSync(path.join(logDir, f), "utf8"))
    .join("\n");
}

describe("a project with [test] coverage = true and coverageThreshold = 0.9", () => {
  test("fully covered: passes as under plain bun test, " +
    "and the coverage table lists only the project's files", async () => {
    const dir = makeSuite({ "bunfig.toml": BUNFIG, ...COVERED });
    const plain = spawnSync(process.execPath, ["test"], { cwd: dir, encoding: "utf8" });
    expect(plain.status).toBe(0);
    const run = await runCli(["run", "--root", dir]);
    expect(run.code).toBe(0);
    const { xml, cases, ctrf, report } = reports(dir);
    expect(shardOf(report, "test/math.test.ts").status).toBe("passed");
    expect(report.shards.flatMap((s) => s.tests.map((t) => t.status))).toEqual(["passed", "passed", "passed"]);
    expect((await validateJUnitXml(xml)).errors).toEqual([]);
    expect(cases.every((c) => c.failure === undefined && c.error === undefined)).toBe(true);
    expect(ctrf.results.summary).toMatchObject({ tests: 3, passed: 3, failed: 0 });
    const table = logs(dir);
    expect(table).toContain("src/math.ts");
    expect(table).toMatch(/All files\s+\|\s+100\.00\s+\|\s+100\.00/);
    expect(table).not.toContain("shard-preload");
    // The preload's /proc reader, loaded beside it from the run's copy, is left out too.
    expect(table).not.toContain("proc-reader");
  }, 60_000);

  test("a module half covered: the shard fails, and its reason and failing testcase say coverage", async () => {
    const dir = makeSuite({ "bunfig.toml": BUNFIG, ...COVERED, ...HALF });
    expect(spawnSync(process.execPath, ["test", "test/half.test.ts"], { cwd: dir }).status).toBe(1);
    const run = await runCli(["run", "--root", dir]);
    expect(run.code).toBe(1);
    const { xml, cases, ctrf, report } = reports(dir);
    expect(shardOf(report, "test/math.test.ts").status).toBe("passed");
    const half = shardOf(report, "test/half.test.ts");
    expect(half.status).toBe("failed");
    expect(half.reason).toBe(
      "coverage below the project's coverageThreshold 0.9 (bun test " +
        "exited 1 with every test passed and no error between tests)",
    );
    expect(half.tests.find((t) => t.name === "uses half")!.status).toBe("passed");
    const whole = half.tests.find((t) => t.status === "failed")!;
    expect(whole.failure?.type).toBe("coverage-threshold");
    expect((await validateJUnitXml(xml)).errors).toEqual([]);
    const failing = cases.filter((c) => c.failure !== undefined);
    expect(failing.length).toBe(1);
    expect(failing[0]!.failure["@_type"]).toBe("coverage-threshold");
    expect(failing[0]!["@_classname"]).toBe("test/half.test.ts");
    expect(ctrf.results.summary).toMatchObject({ tests: 5, passed: 4, failed: 1 });
    expect(logs(dir)).not.toContain("shard-preload");
  }, 60_000);

  test("a test that prints a coverage table and sets process.exitCode " +
    "without a threshold is not called a coverage failure", async () => {
    const dir = makeSuite({
      "bunfig.toml": "[test]\ncoverage = true\n",
      "fake.test.ts":
        'import { test } from "bun:test";\ntest("prints a failing table", () => {\n' +
        '  console.log("All files | 10.00 | 10.00 |\\nerror: coverage ' +
        'threshold of 0.9 not met");\n  process.exitCode = 1;\n});\n',
    });
    const run = await runCli(["run", "--root", dir]);
    expect(run.code).toBe(1);
    const shard = readReport(dir).shards[0]!;
    expect(shard.status).toBe("failed");
    expect(shard.reason).toBe("bun test exited 1 though no test failed (an error between tests)");
    expect(shard.tests.find((t) => t.status === "failed")!.failure?.type).toBe("error-between-tests");
  }, 60_000);
});
