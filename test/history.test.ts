/**
 * The run history on SQLite end to end (docs/history.md): real runs of a suite with a flaky test, the questions,
 * quarantine in every report, concurrent writers and a corrupt history file.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { flakySuite, historyJson, htmlRows, runSuite, threeRuns } from "./helpers/history-suite.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";

afterAll(removeSuites);

/** Test statuses of a report by test, for comparing two runs' reports. */
const statuses = (dir: string) =>
  readReport(dir)
    .shards.flatMap((s) => s.tests.map((t) => `${t.file} > ${t.name}: ${t.status}`))
    .sort();

describe("run history (SQLite)", () => {
  test("three runs: --flaky lists exactly the flaky test with its flip rate, --failing the stable failure since run 1", async () => {
    const dir = flakySuite(true);
    const ids = await threeRuns(dir);
    const flaky = (await historyJson(dir, ["--flaky"])).flaky as Record<string, unknown>[];
    expect(flaky.map((f) => f.test)).toEqual(["a.test.ts > flaky"]);
    expect(flaky[0]!.flipRate).toBe(1);
    expect(flaky[0]!.verdict).toBe("certain");
    expect((flaky[0]!.rateByKind as Record<string, number>).failed).toBeCloseTo(1 / 3);
    const failing = (await historyJson(dir, ["--failing"])).failing as { test: string; since: { runId: string } }[];
    expect(failing.map((f) => f.test)).toEqual(["a.test.ts > stable failure"]);
    expect(failing[0]!.since.runId).toBe(ids[0]!);
    expect(((await historyJson(dir, ["--runs"])).list as unknown[]).length).toBe(3);
  }, 240_000);

  test("a quarantined flaky test's failure leaves exit 0, marked in JUnit, report.json, CTRF, HTML and console", async () => {
    const dir = flakySuite(false, `[shardguard]\nquarantine = ["a.test.ts > flaky", "gone.test.ts > moved"]\n`);
    expect((await runSuite(dir)).code).toBe(0);
    const summaryFile = path.join(dir, "step-summary.md");
    const second = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "60"], {
      limitMs: 90_000,
      env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summaryFile },
    });
    expect(second.code).toBe(0);
    // The step summary lists it with its real status.
    const summary = readFileSync(summaryFile, "utf8");
    expect(summary).toContain("### Quarantined tests (1)");
    expect(summary).toContain("| a\\.test\\.ts \\> flaky | failed |");
    const out = path.join(dir, ".shardguard");
    const test = readReport(dir)
      .shards.flatMap((s) => s.tests)
      .find((t) => t.name === "flaky")!;
    expect(test.status).toBe("failed");
    expect(test.quarantined).toBe(true);
    const junit = readFileSync(path.join(out, "junit.xml"), "utf8");
    expect(junit).toMatch(/<testcase name="flaky"[^>]*>\s*<properties><property name="quarantined" value="true"\/>/);
    expect((await validateJUnitXml(junit)).errors).toEqual([]);
    const ctrf = JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8"));
    const ctrfTest = ctrf.results.tests.find((t: { name: string }) => t.name === "flaky");
    expect(ctrfTest.extra.quarantined).toBe(true);
    expect(htmlRows(dir).find((row) => row[2] === "flaky")![12]).toBe(1);
    expect(second.stdout).toMatch(/failed\s+a\.test\.ts > flaky \(quarantined\)|failed\s+flaky \(quarantined\)/);
    expect(second.stdout).toContain("quarantined and failed: a.test.ts > flaky (failed)");
    expect(second.stdout).toContain('quarantine entry "gone.test.ts > moved" names no planned test');
  }, 240_000);

  test("four concurrent writers (the slices of a matrix) lose no run", async () => {
    const files: Record<string, string> = {};
    for (let i = 1; i <= 8; i++)
      files[`t${i}.test.ts`] = `import { test } from "bun:test";\ntest("t${i}", () => {});\n`;
    const dir = makeSuite(files);
    const history = path.join(dir, "shared.sqlite");
    const runs = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        runCli(["run", "--root", dir, "--jobs", "1", "--shard", `${i}/4`, "--out", path.join(dir, `out${i}`)], {
          env: { SHARDGUARD_HISTORY_URL: history },
          limitMs: 120_000,
        }),
      ),
    );
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0]);
    for (const r of runs) expect(r.stdout).not.toContain("note: run history");
    const answer = await historyJson(dir, ["--runs", "--history", history]);
    const list = answer.list as { slice: string; tests_total: number }[];
    expect(list.map((r) => r.slice).sort()).toEqual(["1/4", "2/4", "3/4", "4/4"]);
    expect(list.reduce((n, r) => n + Number(r.tests_total), 0)).toBe(8);
  }, 240_000);

  test("a corrupt history file is one note; reports and exit code are those of --no-history", async () => {
    const dir = makeSuite({
      "a.test.ts": `import { expect, test } from "bun:test";\ntest("ok", () => {});\ntest("bad", () => expect(1).toBe(2));\n`,
    });
    const without = await runSuite(dir, ["--no-history"]);
    const plain = statuses(dir);
    writeFileSync(path.join(dir, ".shardguard", "history.sqlite"), "this is not a database\n".repeat(200));
    const corrupt = await runSuite(dir);
    expect(corrupt.code).toBe(without.code!);
    expect(corrupt.code).toBe(1);
    expect(corrupt.stdout.match(/shardguard: note: run history .* not used: /g)?.length).toBe(1);
    expect(statuses(dir)).toEqual(plain);
    expect(readReport(dir).exitCode).toBe(1);
  }, 120_000);

  test("bad input: an unknown history option or a bad URL is one line and exit 2", async () => {
    const dir = makeSuite({ "a.test.ts": `import { test } from "bun:test";\ntest("ok", () => {});\n` });
    const unknown = await runCli(["history", "--root", dir, "--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown history option --bogus");
    const url = await runCli(["run", "--root", dir, "--history", "mysql://x/y"]);
    expect(url.code).toBe(2);
    expect(url.stderr.trim().split("\n")).toEqual([
      'shardguard: invalid --history "mysql://x/y": expected a postgres:// or postgresql:// URL, a path to a SQLite ' +
        "file, or off",
    ]);
  }, 120_000);

  test("history import builds a history from report.json files, each run once", async () => {
    const dir = flakySuite(true);
    await runSuite(dir, ["--no-history"]);
    const target = path.join(dir, "imported.sqlite");
    const first = await runCli(["history", "import", path.join(dir, ".shardguard"), "--history", target]);
    expect(first.stdout).toContain("history import: 1 runs added");
    const again = await runCli(["history", "import", path.join(dir, ".shardguard"), "--history", target]);
    expect(again.stdout).toContain("history import: 0 runs added");
    const prune = await runCli(["history", "prune", "--keep", "1", "--history", target]);
    expect(prune.code).toBe(0);
  }, 120_000);
});
