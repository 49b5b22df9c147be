/**
 * Cost per test and per shard (docs/cost.md): a fake-agent suite records spend through `shardguard/cost` and
 * through raw lines with no name; one file spends, then wedges and is killed. Real CLI, real `bun test` children.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import path from "node:path";
import { CostLedger } from "../runner/cost/ledger.ts";
import { readCostLine } from "../runner/cost/lines.ts";
import { parsePreset } from "../runner/presets/preset-schema.ts";
import { layersBelow } from "../runner/presets/preset-values.ts";
import { summarizeCost, usdText } from "../runner/results/cost-apply.ts";
import type { ShardStatus } from "../runner/results/report-model.ts";
import { COST_FILE_ENV, recordCost } from "../runner/cost/record.ts";
import { parseJUnit } from "./helpers/junit-xml.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";
import { bunBinary, PINNED_BUN, SUPPORTED_BUNS } from "./helpers/bun-versions.ts";
import { fixtureFilesIn, makeSuite, readReport, REPO, removeSuites, runCli, shardOf, tempDir } from "./helpers/cli.ts";

afterAll(removeSuites);

const SUITE = path.join(REPO, "test", "fixtures", "cost-suite");

/** The fake-agent suite in a temp project that has this checkout installed as `shardguard`. */
function costSuite(): string {
  const dir = makeSuite(fixtureFilesIn(SUITE), "sg-cost-");
  mkdirSync(path.join(dir, "node_modules"));
  symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"));
  return dir;
}

describe("cost lines", () => {
  test("a line is read with its optional fields; bad ones say why", () => {
    expect(readCostLine('{"usd":0.5,"test":"a > b","inputTokens":3,"outputTokens":4,"model":"m","x":1}')).toEqual({
      ok: true,
      cost: { usd: 0.5, test: "a > b", inputTokens: 3, outputTokens: 4, model: "m" },
    });
    expect(readCostLine("nope")).toEqual({ ok: false, problem: "not JSON" });
    expect(readCostLine("[1]")).toEqual({ ok: false, problem: "not a JSON object" });
    expect(readCostLine('{"usd":-1}')).toEqual({ ok: false, problem: "usd is not a number >= 0" });
    expect(readCostLine('{"usd":"1"}')).toEqual({ ok: false, problem: "usd is not a number >= 0" });
    expect(readCostLine('{"usd":1,"inputTokens":1.5}')).toEqual({
      ok: false,
      problem: "inputTokens is not a whole number >= 0",
    });
  });

  test("the ledger charges a named line to its test, an unnamed one to the test in flight, else to the shard", () => {
    const ledger = new CostLedger();
    ledger.add('{"usd":0.1,"model":"m"}', "t1");
    ledger.add('{"usd":0.2,"model":"n","test":"t2"}', "t1");
    ledger.add('{"usd":0.3}', null);
    ledger.add("{", "t1");
    ledger.add("", "t1");
    const spend = ledger.current;
    expect(spend.total).toEqual({ usd: 0.6, model: "mixed" });
    expect([...spend.perTest]).toEqual([
      ["t1", { usd: 0.1, model: "m" }],
      ["t2", { usd: 0.2, model: "n" }],
    ]);
    expect(spend.unattributedUsd).toBe(0.3);
    expect([spend.lines, spend.badLines, spend.badNamed]).toEqual([4, 1, ["line 4: not JSON"]]);
  });

  test("recordCost appends one line where SHARDGUARD_COST_FILE says, and nothing outside a shard", () => {
    const file = path.join(tempDir("sg-cost-"), "c.jsonl");
    expect(recordCost({ usd: 1.5, test: "x", model: "m" }, { [COST_FILE_ENV]: file })).toBe(true);
    expect(recordCost({ usd: 0 }, { [COST_FILE_ENV]: file })).toBe(true);
    expect(readFileSync(file, "utf8")).toBe('{"usd":1.5,"test":"x","model":"m"}\n{"usd":0}\n');
    expect(recordCost({ usd: 1 }, {})).toBe(false);
    expect(() => recordCost({ usd: Number.NaN }, { [COST_FILE_ENV]: file })).toThrow("usd must be a finite number");
  });
});

/** ctrf.json and junit.xml carry the same costs as report.json. */
function expectOtherReports(out: string): void {
  const ctrf = JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8"));
  const byName = (name: string) => ctrf.results.tests.find((t: { name: string }) => t.name === name)?.extra.cost;
  expect(byName("raw one")).toEqual({ usd: 1.125, source: "cost-file" });
  expect(byName("spends then spins")).toEqual({ usd: 2, model: "model-y", source: "cost-file" });
  expect(byName("raw two")).toBeUndefined();
  expect(ctrf.results.extra.cost).toEqual({ usd: 3.875, usdInUnfinished: 2 });
  expect(ctrf.results.extra.shards.map((s: { cost?: { usd: number } }) => s.cost?.usd)).toEqual([0.75, 1.125, 2]);
  const cases = parseJUnit(readFileSync(path.join(out, "junit.xml"), "utf8")).testsuites.testsuite.flatMap(
    (s: { testcase: Record<string, unknown>[] }) => s.testcase,
  ) as Record<string, unknown>[];
  const props = (name: string) => {
    const found = cases.find((c) => c["@_name"] === name)?.properties as { property: unknown } | undefined;
    const list = found ? [found.property].flat() : [];
    return (list as Record<string, string>[]).map((p) => [p["@_name"], p["@_value"]]);
  };
  expect(props("group > agent b")).toEqual([
    ["cost.usd", "0.5"],
    ["cost.inputTokens", "3000"],
    ["cost.outputTokens", "600"],
    ["cost.model", "model-x"],
    ["cost.source", "cost-file"],
  ]);
  expect(props("spends then spins")).toEqual([
    ["cost.usd", "2"],
    ["cost.model", "model-y"],
    ["cost.source", "cost-file"],
  ]);
  expect(props("raw two")).toEqual([]);
}

describe("run totals", () => {
  test("summary.cost sums shards (as merge sums its slices'); timed-out, crashed and cancelled ones are unfinished", () => {
    const shard = (status: ShardStatus, usd: number, killedBy: "timeout" | "cancel" | null = null) => ({
      status,
      killedBy,
      cost: { usd, unattributedUsd: 0, lines: 1, badLines: 0 },
    });
    expect(
      summarizeCost([
        shard("passed", 0.1),
        shard("timed-out", 0.2, "timeout"),
        shard("crashed", 0.3),
        shard("failed", 0.4, "cancel"),
        { status: "never-started", killedBy: null },
      ]),
    ).toEqual({ usd: 1, usdInUnfinished: 0.9 });
    expect(summarizeCost([{ status: "passed", killedBy: null }])).toBeUndefined();
  });

  test("dollars print as cents, more places only when cents would round", () => {
    expect([usdText(4.12), usdText(1.125), usdText(20, true), usdText(20), usdText(0.000001)]).toEqual([
      "$4.12",
      "$1.125",
      "$20",
      "$20.00",
      "$0.000001",
    ]);
  });
});

describe("a fake-agent suite", () => {
  test("shows each test's, each shard's spend in report.json, the wedged shard's before its kill", async () => {
    const dir = costSuite();
    const summaryFile = path.join(tempDir("sg-cost-"), "step-summary.md");
    const run = await runCli(["run", "--root", dir, "--jobs", "3", "--timeout", "8", "--grace", "1"], {
      limitMs: 90_000,
      env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summaryFile },
    });
    expect(run.code).toBe(1);
    const report = readReport(dir);
    const costs = (file: string) => shardOf(report, file).tests.map((t) => [t.name, t.status, t.cost]);
    expect(costs("helper.test.ts")).toEqual([
      ["agent a", "passed", { usd: 0.25, inputTokens: 1000, outputTokens: 200, model: "model-x", source: "cost-file" }],
      [
        "group > agent b",
        "passed",
        { usd: 0.5, inputTokens: 3000, outputTokens: 600, model: "model-x", source: "cost-file" },
      ],
    ]);
    expect(costs("raw.test.ts")).toEqual([
      ["raw one", "passed", { usd: 1.125, source: "cost-file" }],
      ["raw two", "passed", undefined],
    ]);
    expect(costs("wedged.test.ts")).toEqual([
      ["spends then spins", "timed-out", { usd: 2, model: "model-y", source: "cost-file" }],
    ]);
    expect(shardOf(report, "helper.test.ts").cost).toEqual({
      usd: 0.75,
      inputTokens: 4000,
      outputTokens: 800,
      unattributedUsd: 0,
      lines: 2,
      badLines: 0,
    });
    const raw = shardOf(report, "raw.test.ts");
    expect(raw.cost).toEqual({ usd: 1.125, unattributedUsd: 0, lines: 3, badLines: 1 });
    expect(raw.notes).toContain("1 cost line refused (line 2: not JSON), the rest counted");
    expect(shardOf(report, "wedged.test.ts").cost?.usd).toBe(2);
    expect(report.summary.cost).toEqual({ usd: 3.875, usdInUnfinished: 2 });
    expect(run.stdout).toContain("shardguard: spent $3.875; $2.00 in shards that did not finish\n");
    expect(readFileSync(summaryFile, "utf8")).toContain("Spent $3.875, $2.00 of it in shards that did not finish.");
    expectOtherReports(path.join(dir, ".shardguard"));
    const html = readFileSync(path.join(dir, ".shardguard", "report.html"), "utf8");
    expect(html).toContain('<span id="spent">spent $3.875, $2.00 in unfinished shards</span>');
    expect(html.split('"cost":"$2.00"').length).toBe(2);
    expect((await validateJUnitXml(readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8"))).errors).toEqual(
      [],
    );
  }, 120_000);
});

/** Six files that spend $1 each, in plan order. */
function sixDollarFiles(): string {
  const file = `import { test } from "bun:test";
import { appendFileSync } from "node:fs";
test("spends a dollar", async () => {
  appendFileSync(process.env.SHARDGUARD_COST_FILE!, '{"usd":1}\\n');
  await Bun.sleep(100);
});
`;
  return makeSuite(Object.fromEntries(["a", "b", "c", "d", "e", "f"].map((n) => [`${n}.test.ts`, file])), "sg-budget-");
}

describe("--budget-usd", () => {
  test("with jobs 1 and six $1 files, a $2.50 budget runs three shards; three never start, named; exit 1", async () => {
    const dir = sixDollarFiles();
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "60", "--budget-usd", "2.5"], {
      limitMs: 90_000,
    });
    expect(run.code).toBe(1);
    const report = readReport(dir);
    const reason = "budget of $2.50 reached ($3.00 spent)";
    expect(report.shards.map((s) => [s.files[0], s.status, s.status === "never-started" ? s.reason : null])).toEqual([
      ["a.test.ts", "passed", null],
      ["b.test.ts", "passed", null],
      ["c.test.ts", "passed", null],
      ["d.test.ts", "never-started", reason],
      ["e.test.ts", "never-started", reason],
      ["f.test.ts", "never-started", reason],
    ]);
    expect(report.summary.cost).toEqual({ usd: 3, usdInUnfinished: 0, budgetUsd: 2.5, budgetReached: reason });
    expect(run.stdout).toContain("shardguard: spent $3.00 (budget $2.50)\n");
    expect(run.stdout).toContain(`shardguard: ${reason}: no further shard was started\n`);
  }, 120_000);

  test("a budget with no cost recorded is said once; the run's verdict is its tests'", async () => {
    const dir = makeSuite(
      { "free.test.ts": 'import { test } from "bun:test";\ntest("free", () => {});\n' },
      "sg-budget-",
    );
    const run = await runCli(["run", "--root", dir, "--timeout", "60", "--budget-usd", "5"], { limitMs: 60_000 });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("shardguard: spent $0.00 (budget $5)\n");
    expect(run.stdout.split("a budget is set but no shard recorded a cost").length).toBe(2);
    expect(readReport(dir).summary.cost).toEqual({ usd: 0, usdInUnfinished: 0, budgetUsd: 5 });
  }, 60_000);

  test("a preset's budget-usd is a layer below [shardguard], checked by the setting's rule", () => {
    const preset = parsePreset("paid", { globs: ["a.test.ts"], "budget-usd": "2.5" }, "bunfig.toml [x]");
    expect(preset.budgetUsd).toBe(2.5);
    expect(layersBelow(preset)[0]!.values).toMatchObject({ budgetUsd: 2.5 });
    expect(parsePreset("free", { globs: ["a.test.ts"] }, "bunfig.toml [x]").budgetUsd).toBeNull();
  });

  test("a bad budget is one line and exit 2, before any child", async () => {
    const dir = sixDollarFiles();
    for (const bad of ["-1", "0", "abc"]) {
      const run = await runCli(["run", "--root", dir, "--budget-usd", bad]);
      expect([run.code, run.stderr.trim().split("\n").length]).toEqual([2, 1]);
      expect(run.stderr).toContain("expected a number of dollars above 0");
    }
  }, 60_000);
});

describe("--budget-kill", () => {
  test("ends running shards once the budget is reached (SIGTERM, grace), their spend kept", async () => {
    const sleeper = (spend: boolean) => `import { test } from "bun:test";
import { appendFileSync } from "node:fs";
test("works a long time", async () => {
  await Bun.sleep(500);
  ${spend ? `appendFileSync(process.env.SHARDGUARD_COST_FILE!, '{"usd":1}\\n');` : ""}
  await Bun.sleep(60_000);
});
`;
    const dir = makeSuite({ "a.test.ts": sleeper(true), "b.test.ts": sleeper(false) }, "sg-budget-");
    const args = ["run", "--root", dir, "--jobs", "2", "--timeout", "120", "--grace", "1"];
    const run = await runCli([...args, "--budget-usd", "1", "--budget-kill"], { limitMs: 90_000 });
    expect(run.code).toBe(1);
    // Far below the 60 s the tests sleep: the budget ended them.
    expect(run.ms).toBeLessThan(40_000);
    const report = readReport(dir);
    const reason = "budget of $1.00 reached ($1.00 spent)";
    expect(report.shards.map((s) => [s.files[0], s.killedBy, s.reason])).toEqual([
      ["a.test.ts", "cancel", `run cancelled (${reason})`],
      ["b.test.ts", "cancel", `run cancelled (${reason})`],
    ]);
    expect(shardOf(report, "a.test.ts").tests.map((t) => [t.status, t.cost?.usd])).toEqual([["crashed", 1]]);
    expect(report.summary.cost).toMatchObject({ usd: 1, usdInUnfinished: 1, budgetUsd: 1 });
  }, 120_000);
});

describe("on every supported Bun", () => {
  for (const version of SUPPORTED_BUNS.filter((v) => v !== PINNED_BUN)) {
    test(`Bun ${version}: the helper and raw lines reach their tests`, async () => {
      const dir = makeSuite(fixtureFilesIn(SUITE, ["helper", "raw"]), "sg-cost-");
      mkdirSync(path.join(dir, "node_modules"));
      symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"));
      const bun = await bunBinary(version);
      const run = await runCli(["run", "--root", dir, "--bun", bun, "--timeout", "60"], { limitMs: 90_000 });
      expect(run.code).toBe(0);
      const report = readReport(dir);
      const usd = (file: string) => shardOf(report, file).tests.map((t) => [t.name, t.cost?.usd]);
      expect([...usd("helper.test.ts"), ...usd("raw.test.ts")]).toEqual([
        ["agent a", 0.25],
        ["group > agent b", 0.5],
        ["raw one", 1.125],
        ["raw two", undefined],
      ]);
      expect(report.summary.cost).toEqual({ usd: 1.875, usdInUnfinished: 0 });
    }, 120_000);
  }
});
