/**
 * Beyond one machine, end to end with the real CLI and real `bun test`
 * children: slices of a plan (`--shard I/N`), `shardguard merge` against the
 * plan (a lost slice, a plan-hash mismatch), and `--last-failed`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtureFiles, makeSuite, readReport, REPO, removeSuites, runCli, type CliRun } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";
import type { RunReport } from "../runner/results/report-model.ts";
import { takeOverBunPlanFlags } from "../runner/commands/bun-plan-flags.ts";
import { splitBunTestArgs } from "../runner/presets/flags.ts";
import { parseJUnit } from "./helpers/junit-xml.ts";

afterAll(removeSuites);

const pass = fixtureFiles("pass")["pass.test.ts"]!;
const fail = fixtureFiles("fail")["fail.test.ts"]!;
/** Seven files: six pass, one fails. */
const suiteFiles = (): Record<string, string> => {
  const files: Record<string, string> = {};
  for (const name of ["a", "b", "c", "d", "e", "f"]) files[`t/${name}.test.ts`] = pass;
  files["t/g.test.ts"] = fail;
  return files;
};
describe("three slices of a suite, one lost, merged", () => {
  let dir: string;
  const slices: { run: CliRun; report: RunReport }[] = [];
  let merged: CliRun;
  let mergedReport: RunReport;
  let complete: CliRun;
  beforeAll(async () => {
    dir = makeSuite(suiteFiles());
    for (const i of [1, 2, 3]) {
      const run = await runCli([
        "run",
        "--root",
        dir,
        "--out",
        path.join(dir, `out${i}`),
        "--shard",
        `${i}/3`,
        "--jobs",
        "2",
      ]);
      slices.push({ run, report: readReport(dir, path.join(dir, `out${i}`, "report.json")) });
    }
    // Slice 2's artifact is lost: the merge gets only slices 1 and 3.
    merged = await runCli(["merge", path.join(dir, "out1"), path.join(dir, "out3"), "--out", path.join(dir, "merged")]);
    mergedReport = readReport(dir, path.join(dir, "merged", "report.json"));
    complete = await runCli(["merge", "out3", "out1", "out2", "--out", "all"], { cwd: dir });
  });

  test("the slices are disjoint, cover the plan and share one plan hash", () => {
    const plan = slices[0]!.report.plan!;
    const planned = plan.shards.flatMap((s) => s.files);
    expect(planned).toHaveLength(7);
    const ran = slices.flatMap((s) => s.report.shards.flatMap((x) => x.files));
    expect([...ran].sort()).toEqual([...planned].sort());
    expect(new Set(ran).size).toBe(ran.length);
    expect(new Set(slices.map((s) => s.report.plan!.hash)).size).toBe(1);
    slices.forEach((s, i) => {
      expect(s.report.slice).toEqual({ index: i + 1, count: 3 });
      // Each slice ran exactly what the manifest gives it.
      expect(s.report.shards.flatMap((x) => x.files).sort()).toEqual(
        plan.shards
          .filter((x) => x.slice === i + 1)
          .flatMap((x) => x.files)
          .sort(),
      );
    });
  });

  test("a slice's JUnit says which slice it is and stays valid against the XSD; CTRF says so in extra", async () => {
    const xml = readFileSync(path.join(dir, "out2", "junit.xml"), "utf8");
    expect((await validateJUnitXml(xml)).errors).toEqual([]);
    const doc = parseJUnit(xml);
    expect(doc.testsuites["@_name"]).toBe("shardguard slice 2/3");
    for (const suite of doc.testsuites.testsuite) {
      const props = Object.fromEntries(
        suite.properties.property.map((p: Record<string, string>) => [p["@_name"], p["@_value"]]),
      );
      expect(props).toEqual({ "shardguard.slice": "2/3", "shardguard.plan-hash": slices[1]!.report.plan!.hash });
    }
    const ctrf = JSON.parse(readFileSync(path.join(dir, "out2", "ctrf.json"), "utf8"));
    expect(ctrf.results.extra.slice).toEqual({ index: 2, count: 3 });
    expect(ctrf.results.extra.planHash).toBe(slices[1]!.report.plan!.hash);
  });

  test("the merge covers the plan, the lost slice's files are never-started, exit 1", async () => {
    expect(merged.code).toBe(1);
    const planned = slices[0]!.report.plan!.shards.flatMap((s) => s.files);
    expect(mergedReport.shards.flatMap((s) => s.files)).toEqual(planned); // plan order
    expect(mergedReport.shards.map((s) => s.index)).toEqual(planned.map((_, i) => i + 1));
    const lost = new Set(slices[1]!.report.shards.flatMap((s) => s.files));
    for (const shard of mergedReport.shards) {
      const fromLost = shard.files.every((f) => lost.has(f));
      if (fromLost) {
        expect(shard.status).toBe("never-started");
        expect(shard.reason).toBe("slice 2/3 reported nothing");
        expect(
          shard.tests.every((t) => t.status === "never-started" && t.failure?.message === "slice 2/3 reported nothing"),
        ).toBe(true);
      } else {
        expect(shard.status).not.toBe("never-started");
      }
    }
    expect(mergedReport.merged!.slices.map((s) => s.runId === null)).toEqual([false, true, false]);
    expect(merged.stdout).toContain("slice 2/3: reported nothing");
    const xml = readFileSync(path.join(dir, "merged", "junit.xml"), "utf8");
    expect((await validateJUnitXml(xml)).errors).toEqual([]);
    const doc = parseJUnit(xml);
    expect(doc.testsuites["@_name"]).toBe("shardguard");
    expect(doc.testsuites.testsuite.map((s: Record<string, string>) => s["@_name"])).toEqual(planned);
    expect(xml.match(/type="never-started" message="slice 2\/3 reported nothing"/g)?.length).toBe(lost.size);
  });

  test("the complete merge has every slice's tests and exits 1 only for the failing file", () => {
    expect(complete.code).toBe(1);
    const report = readReport(dir, path.join(dir, "all", "report.json"));
    expect(report.summary.shards).toMatchObject({ passed: 6, failed: 1, "never-started": 0, total: 7 });
    const ctrf = JSON.parse(readFileSync(path.join(dir, "all", "ctrf.json"), "utf8"));
    expect(ctrf.results.summary.tests).toBe(report.summary.tests.total);
    expect(ctrf.results.extra.mergedFrom.map((m: { slice: number }) => m.slice)).toEqual([1, 2, 3]);
  });
});

describe("merge refuses what it cannot merge honestly (exit 2)", () => {
  let dir: string;
  beforeAll(async () => {
    dir = makeSuite({ "a.test.ts": pass, "b.test.ts": pass, "c.test.ts": pass });
    await runCli(["run", "--root", dir, "--out", path.join(dir, "s1"), "--shard", "1/2"]);
    // Another plan: two files per shard on the machine of slice 2.
    await runCli(["run", "--root", dir, "--out", path.join(dir, "s2"), "--shard", "2/2", "--files-per-shard", "2"]);
  });

  test("a plan-hash mismatch names the slices, and leaves no earlier merge's reports at --out", async () => {
    expect((await runCli(["merge", "s1", "--out", "m"], { cwd: dir })).code).toBe(1); // slice 2 missing
    expect(readFileSync(path.join(dir, "m", "junit.xml"), "utf8")).toContain("<testsuites");
    const run = await runCli(["merge", "s1", "s2", "--out", "m"], { cwd: dir });
    expect(run.code).toBe(2);
    for (const f of ["junit.xml", "report.json", "ctrf.json"]) expect(existsSync(path.join(dir, "m", f))).toBe(false);
    expect(run.stderr).toMatch(
      /different plans: slice 1\/2 \(.*s1\) has plan hash [0-9a-f]{16}, slice 2\/2 \(.*s2\) has plan hash [0-9a-f]{16}/,
    );
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
  });

  test("the same slice twice, no report at all, an unknown flag", async () => {
    mkdirSync(path.join(dir, "s1copy"));
    cpSync(path.join(dir, "s1", "report.json"), path.join(dir, "s1copy", "report.json"));
    expect((await runCli(["merge", "s1", "s1copy"], { cwd: dir })).stderr).toContain("slice 1/2 was given twice");
    mkdirSync(path.join(dir, "empty"));
    const none = await runCli(["merge", "empty"], { cwd: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("no slice report found");
    expect((await runCli(["merge", "s1", "--jobs", "2"], { cwd: dir })).code).toBe(2);
  });
});

describe("--shard on the command line", () => {
  test("more slices than shards: the empty slice runs nothing, says so, reports the plan and exits 0", async () => {
    const dir = makeSuite({ "a.test.ts": pass, "b.test.ts": pass });
    const run = await runCli(["run", "--root", dir, "--shard", "4/4"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("slice 4/4: 0 shards of the plan's 2");
    expect(run.stdout).toContain("this slice is empty");
    const report = readReport(dir);
    expect(report.shards).toEqual([]);
    expect(report.plan!.shards.map((s) => s.slice)).toEqual([1, 2]);
    const list = await runCli(["list", "--root", dir, "--shard", "2/4"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("b.test.ts");
    expect(list.stdout).not.toContain("a.test.ts");
  });

  test("list --shard I/N: every N from 1 to files+2 gives " +
    "disjoint slices that cover the plan, one hash per N", async () => {
    const names = ["a", "b", "c", "d", "e"].map((n) => `${n}.test.ts`);
    const dir = makeSuite(Object.fromEntries(names.map((n) => [n, pass])));
    for (let n = 1; n <= names.length + 2; n++) {
      const lists = await Promise.all(
        Array.from({ length: n }, (_, i) => runCli(["list", "--root", dir, "--shard", `${i + 1}/${n}`])),
      );
      const sliceFiles = lists.map((l) =>
        l.stdout
          .split("\n")
          .filter((line) => /^ {4}\S+\.test\.ts {2}/.test(line))
          .map((line) => line.trim().split(/\s+/)[0]!),
      );
      expect(lists.every((l) => l.code === 0)).toBe(true);
      expect(sliceFiles.flat().sort()).toEqual(names); // covering and disjoint
      expect(sliceFiles.filter((f) => f.length === 0)).toHaveLength(Math.max(0, n - names.length));
      expect(new Set(lists.map((l) => /plan hash ([0-9a-f]{16})/.exec(l.stdout)?.[1])).size).toBe(1);
    }
  }, 60_000);

  test("--timings balances the slices by recorded duration; " +
    "merge --update-timings writes what the slices measured", async () => {
    const dir = makeSuite({ "a.test.ts": pass, "b.test.ts": pass, "c.test.ts": pass, "d.test.ts": pass });
    // a is as long as the three others together: alone in one slice. By file count it would share.
    writeFileSync(
      path.join(dir, "t.json"),
      JSON.stringify({
        version: 1,
        files: { "a.test.ts": 3000, "b.test.ts": 1000, "c.test.ts": 1000, "d.test.ts": 1000 },
      }),
    );
    const listed = async (i: number, timings: boolean) => {
      const run = await runCli([
        "list",
        "--root",
        dir,
        "--shard",
        `${i}/2`,
        ...(timings ? ["--timings", path.join(dir, "t.json")] : []),
      ]);
      return run.stdout
        .split("\n")
        .filter((l) => /^ {4}\S+\.test\.ts/.test(l))
        .map((l) => l.trim().split(/\s+/)[0]);
    };
    expect(await listed(1, true)).toEqual(["a.test.ts"]);
    expect(await listed(2, true)).toEqual(["b.test.ts", "c.test.ts", "d.test.ts"]);
    expect(await listed(1, false)).toEqual(["a.test.ts", "c.test.ts"]);
    for (const i of [1, 2])
      await runCli([
        "run",
        "--root",
        dir,
        "--shard",
        `${i}/2`,
        "--timings",
        path.join(dir, "t.json"),
        "--out",
        path.join(dir, `o${i}`),
      ]);
    // Only slice 1 is merged: a ran, b-d did not, so only a's duration changes.
    const merged = await runCli(["merge", "o1", "--update-timings", "t.json", "--out", "m"], { cwd: dir });
    expect(merged.code).toBe(1);
    const after = JSON.parse(readFileSync(path.join(dir, "t.json"), "utf8"));
    expect(Object.keys(after.files)).toEqual(["a.test.ts", "b.test.ts", "c.test.ts", "d.test.ts"]);
    expect(after.files["a.test.ts"]).toBeLessThan(3000);
    expect(after.files["a.test.ts"]).toBeGreaterThan(0);
    expect(after.files["b.test.ts"]).toBe(1000);
  }, 60_000);

  test(
    "a bad I/N, or --shard with --last-failed (with " + "or without --preset), exits 2 before anything runs",
    async () => {
      const dir = makeSuite({ "a.test.ts": pass });
      // shardguard's own flags and --shard after "--" would reach every shard, which ignores or misapplies them.
      for (const [after, says] of [
        ["--shard=2/2", `--shard=2/2 after "--" would slice each shard's own files`],
        ["--last-failed", `--last-failed after "--" is a flag of shardguard run, not of bun test`],
        ["--jobs=1", `--jobs=1 after "--" is a flag of shardguard run`],
      ] as const) {
        for (const command of ["run", "bg"]) {
          const r = await runCli([command, "--root", dir, "--", after]);
          expect(r.code).toBe(2);
          expect(r.stderr).toContain(says);
        }
      }
      // A combination bun test itself refuses (every shard would end as a load error): exit 2, nothing started.
      const both = await runCli(["run", "--root", dir, "--", "--retry", "1", "--rerun-each", "2"]);
      expect(both.code).toBe(2);
      expect(both.stderr).toContain("--retry 1 and --rerun-each 2 cannot be used together");
      expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
      // A file or filter after "--" would run in every shard beside its own files, its tests
      // blamed on them; `--bail 1` is such a filter to Bun 1.4.4 ("1"), `--bail=1` the flag.
      for (const after of [["./extra/zz.test.ts"], ["--bail", "1"]]) {
        const r = await runCli(["run", "--root", dir, "--", ...after]);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain(
          `bun test flags after "--" cannot include files or filters (${JSON.stringify(after.at(-1))})`,
        );
      }
      expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
      // --shard twice: one line, as for shardguard's other flags, never the last one silently.
      const twice = await runCli(["run", "--root", dir, "--shard", "1/3", "--shard", "2/3"]);
      expect(twice.code).toBe(2);
      expect(twice.stderr).toContain("flag --shard was given twice");
      const bad = await runCli(["run", "--root", dir, "--shard", "3/2"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('invalid --shard "3/2": expected I/N');
      expect((await runCli(["run", "--root", dir, "--shard", "1/2", "--last-failed"])).code).toBe(2);
      expect(
        (await runCli(["run", "--root", dir, "--shard", "1/2", "--last-failed", "--preset", "gstack-paid"])).code,
      ).toBe(2);
    },
  );

  test("a preset's plan is sliced the same way, and its slices merge", async () => {
    const dir = makeSuite({
      "bunfig.toml": '[shardguard.presets.slow]\nglobs = ["e2e/*.test.ts"]\n',
      "e2e/a.test.ts": pass,
      "e2e/b.test.ts": pass,
      "e2e/c.test.ts": fail,
    });
    const runs = await Promise.all(
      [1, 2].map((i) => runCli(["run", "--preset", "slow", "--shard", `${i}/2`, "--out", `o${i}`], { cwd: dir })),
    );
    expect(runs.map((r) => r.stdout.match(/slice \d\/2: \d shards? of the plan's 3/)?.[0])).toEqual([
      "slice 1/2: 2 shards of the plan's 3",
      "slice 2/2: 1 shard of the plan's 3",
    ]);
    const merged = await runCli(["merge", "o1", "o2", "--out", "m"], { cwd: dir });
    expect(merged.code).toBe(1);
    const report = readReport(dir, path.join(dir, "m", "report.json"));
    expect(report.preset?.name).toBe("slow");
    expect(report.shards.map((s) => [s.files[0], s.status])).toEqual([
      ["e2e/a.test.ts", "passed"],
      ["e2e/b.test.ts", "passed"],
      ["e2e/c.test.ts", "failed"],
    ]);
  });
});

describe("bun test --preset NAME with Bun's own plan flags", () => {
  /** A suite whose bunfig loads the preset preload, with preset "slow" over e2e/. */
  const presetSuite = () =>
    makeSuite({
      "bunfig.toml":
        `[test]\npreload = ` +
        `[${JSON.stringify(path.join(REPO, "preset", "preload.ts"))}]\n\n[shardguard.presets.slow]\nglobs = ` +
        `["e2e/*.test.ts"]\n`,
      "test/shardguard.slow.test.ts": pass,
      "e2e/a.test.ts": pass,
      "e2e/b.test.ts": pass,
      "e2e/c.test.ts": fail,
    });
  /** `bun test ARGS` in `dir` with no SHARDGUARD_* of ours leaking in. */
  const bunTest = (dir: string, args: string[], env: Record<string, string> = {}) => {
    const clean: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("SHARDGUARD_")) clean[k] = v;
    return spawnSync(process.execPath, ["test", ...args], {
      cwd: dir,
      encoding: "utf8",
      env: { ...clean, NO_COLOR: "1", ...env },
      timeout: 60_000,
    });
  };

  test("--shard=I/N cannot be taken over: Bun slices its files before the preload, so slice 1 is refused (exit 2) " +
    "naming shardguard's --shard and slice 2 never reaches shardguard", () => {
    const dir = presetSuite();
    const first = bunTest(dir, ["--preset", "slow", "--shard=1/2"]);
    expect(first.status).toBe(2);
    expect(first.stderr).toContain(
      "--shard=1/2 cannot be used with a preset: Bun applies it to its own file list before the preset's preload runs",
    );
    expect(first.stderr).toContain("use shardguard run --preset NAME --shard I/N");
    // Bun's slice 2 holds no file (the entry file is its only one): the preload never runs.
    const second = bunTest(dir, ["--preset", "slow", "--shard=2/2"]);
    expect(second.stdout + second.stderr).toContain("running 0/1 test file");
    expect(second.stdout).not.toContain("shardguard:");
    expect(existsSync(path.join(dir, ".shardguard", "runs"))).toBe(false);
  }, 60_000);

  test("--timings=FILE orders the run and --update-timings writes the measured durations into it", () => {
    const dir = presetSuite();
    writeFileSync(
      path.join(dir, "t.json"),
      JSON.stringify({ version: 1, files: { "e2e/b.test.ts": 5000, "other.test.ts": 7 } }),
    );
    const r = bunTest(dir, ["--preset", "slow", "--timings=t.json", "--update-timings"]);
    expect(r.status).toBe(1);
    const after = JSON.parse(readFileSync(path.join(dir, "t.json"), "utf8"));
    // Merged with what was there; every file that ran now has its measured duration.
    expect(after.files["other.test.ts"]).toBe(7);
    expect(after.files["e2e/b.test.ts"]).toBeLessThan(5000);
    for (const f of ["e2e/a.test.ts", "e2e/b.test.ts", "e2e/c.test.ts"]) expect(after.files[f]).toBeGreaterThan(0);
  }, 60_000);

  test("--update-timings without --timings, and these flags " +
    "after -- of shardguard run, exit 2 before anything runs", async () => {
    const dir = presetSuite();
    // Bun refuses this one itself, before the preload (exit 1, its own line); nothing of ours runs.
    // The preset's own --retry and the line's --rerun-each: bun test refuses the pair, so exit 2 before anything runs.
    writeFileSync(
      path.join(dir, "bunfig.toml"),
      `${readFileSync(path.join(dir, "bunfig.toml"), "utf8")}shard-flags = ["--retry=1"]\n`,
    );
    const pair = bunTest(dir, ["--preset", "slow", "--rerun-each", "2"]);
    expect(pair.status).toBe(2);
    expect(pair.stderr).toContain("preset slow: shard flags --retry=1 and --rerun-each=2 cannot be used together");
    const noFile = bunTest(dir, ["--preset", "slow", "--update-timings"]);
    expect(noFile.status).not.toBe(0);
    expect(noFile.stderr).toContain("--update-timings requires --timings");
    expect(() => takeOverBunPlanFlags(splitBunTestArgs(["--update-timings"]).flags)).toThrow(
      "--update-timings writes to the first --timings file; give --timings=FILE too",
    );
    expect(
      takeOverBunPlanFlags(
        splitBunTestArgs(["--timings=a.json", "--timings", "b.json", "--update-timings", "--retry", "1"]).flags,
      ),
    ).toMatchObject({
      runArgs: ["--timings", "a.json,b.json", "--update-timings", "a.json"],
      shardFlags: [{ name: "--retry", value: "1" }],
    });
    const after = await runCli(["run", "--preset", "slow", "--", "--timings=t.json"], { cwd: dir });
    expect(after.code).toBe(2);
    expect(after.stderr).toContain(
      `--timings=t.json cannot be used with a preset: it orders the whole run: give shardguard's own --timings ` +
        `FILE before "--"`,
    );
    expect(existsSync(path.join(dir, ".shardguard", "runs"))).toBe(false);
  }, 60_000);

  test("shardguard run's own flags on the bun test line (--last-failed, --jobs) exit 2 before anything runs, " +
    "instead of a whole run that ignored them", () => {
    const dir = presetSuite();
    for (const [args, said] of [
      [["--preset", "slow", "--last-failed"], "bun test: --last-failed is a flag of shardguard run, not of bun test"],
      [["--preset", "slow", "--jobs=1"], "bun test: --jobs=1 is a flag of shardguard run, not of bun test"],
      // Bun reads the 1 of "--jobs 1" as a filter; the flag is named, not "invalid file 1".
      [["--preset", "slow", "--jobs", "1"], "bun test: --jobs is a flag of shardguard run"],
    ] as const) {
      const r = bunTest(dir, [...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(said);
      expect(r.stderr).toContain("use shardguard run --preset NAME --");
      expect(existsSync(path.join(dir, ".shardguard", "runs"))).toBe(false);
    }
    // Bun's own flags of the same family still pass: --bun is Bun's runtime flag.
    expect(takeOverBunPlanFlags(splitBunTestArgs(["--bun", "--retry=1"]).flags).shardFlags.map((f) => f.name)).toEqual([
      "--bun",
      "--retry",
    ]);
    for (const flag of ["--out=o", "--files-per-shard=2", "--no-test-events", "--grace=1"]) {
      expect(() => takeOverBunPlanFlags(splitBunTestArgs([flag]).flags)).toThrow(
        "is a flag of shardguard run, not of bun test",
      );
    }
  }, 60_000);
});

describe("--last-failed", () => {
  test("reruns exactly the failed, timed-out, crashed and never-started files of the newest run, and says of " +
    "which run", async () => {
    const dir = makeSuite({
      ...fixtureFiles("pass", "fail", "spin", "exit0"),
      "skips.test.ts": 'import { test } from "bun:test";\ntest.skip("later", () => {});\n',
      "queued.test.ts": pass,
    });
    const first = await runCli(["run", "--root", dir, "--timeout", "2", "--grace", "0.5", "--jobs", "2"]);
    expect(first.code).toBe(1);
    const earlier = readReport(dir);
    // A never-started file needs a run that stopped early: the newest run's
    // report is one whose last shard was still queued (as a killed runner leaves it).
    const queued = makeReport(
      [
        ...earlier.shards.filter((s) => s.files[0] !== "queued.test.ts"),
        makeShard({
          index: 6,
          files: ["queued.test.ts"],
          status: "never-started",
          startedAt: null,
          logPath: null,
          reason: "queued: not started when this report was written",
          tests: [makeTest({ name: "adds", file: "queued.test.ts", status: "never-started" })],
        }),
      ],
      { runId: "20991231T000000Z-abcdef", completed: false, exitCode: null, finishedAt: null, root: dir },
    );
    mkdirSync(path.join(dir, ".shardguard", "runs", queued.runId), { recursive: true });
    writeFileSync(path.join(dir, ".shardguard", "runs", queued.runId, "report.json"), JSON.stringify(queued));

    const rerun = await runCli([
      "run",
      "--root",
      dir,
      "--last-failed",
      "--timeout",
      "2",
      "--grace",
      "0.5",
      "--jobs",
      "2",
    ]);
    expect(rerun.code).toBe(1);
    expect(rerun.stdout).toContain(`rerunning 4 files of run ${queued.runId}`);
    const report = readReport(dir);
    expect(report.shards.flatMap((s) => s.files).sort()).toEqual([
      "exit0.test.ts",
      "fail.test.ts",
      "queued.test.ts",
      "spin.test.ts",
    ]);
    expect(report.rerunOf!.runId).toBe(queued.runId);
    expect([...report.rerunOf!.files].sort()).toEqual([
      "exit0.test.ts",
      "fail.test.ts",
      "queued.test.ts",
      "spin.test.ts",
    ]);
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    expect((await validateJUnitXml(xml)).errors).toEqual([]);
    expect(xml).toContain(`<property name="shardguard.rerun-of" value="${queued.runId}"/>`);
    expect(JSON.parse(readFileSync(path.join(dir, ".shardguard", "ctrf.json"), "utf8")).results.extra.rerunOf).toBe(
      queued.runId,
    );
  }, 60_000);

  test("with --preset: reruns the preset's failed files whole, with its settings; a file no longer in the preset " +
    "is named and not rerun", async () => {
    const dir = makeSuite({
      "bunfig.toml":
        '[shardguard.presets.slow]\nglobs = ["e2e/*.test.ts"]\n[shardguard.presets.slow.env]\nSLOW_MARK = "on"\n',
      "e2e/a.test.ts": pass,
      "e2e/b.test.ts":
        `import { test, expect } from "bun:test";\ntest("needs the preset's env", () => { ` +
        `expect(process.env.SLOW_MARK).toBe("on"); });\ntest("fails", () => { expect(1).toBe(2); });\n`,
      "e2e/c.test.ts": fail,
    });
    const first = await runCli(["run", "--preset", "slow"], { cwd: dir });
    expect(first.code).toBe(1);
    const firstId = readReport(dir).runId;
    const listed = await runCli(["list", "--preset", "slow", "--last-failed"], { cwd: dir });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`--last-failed: rerunning 2 files of run ${firstId}`);
    expect(listed.stdout).toContain(`e2e/b.test.ts  (did not pass in run ${firstId})`);
    expect(listed.stdout).not.toContain("e2e/a.test.ts");
    const rerun = await runCli(["run", "--preset", "slow", "--last-failed"], { cwd: dir });
    expect(rerun.code).toBe(1);
    const report = readReport(dir);
    expect(report.preset?.name).toBe("slow");
    expect(report.rerunOf?.runId).toBe(firstId);
    expect(report.shards.map((s) => s.files[0])).toEqual(["e2e/b.test.ts", "e2e/c.test.ts"]);
    expect(report.shards[0]!.tests.map((t) => [t.name, t.status])).toEqual([
      ["needs the preset's env", "passed"],
      ["fails", "failed"],
    ]);
    // c leaves the preset: it is named, b still reruns.
    writeFileSync(
      path.join(dir, "bunfig.toml"),
      '[shardguard.presets.slow]\nglobs = ["e2e/a.test.ts", "e2e/b.test.ts"]\n',
    );
    const narrowed = await runCli(["run", "--preset", "slow", "--last-failed"], { cwd: dir });
    expect(narrowed.stderr).toContain("--last-failed: e2e/c.test.ts is not one of preset slow's files; not rerun");
    expect(readReport(dir).shards.map((s) => s.files[0])).toEqual(["e2e/b.test.ts"]);
    // None of the files that did not pass can run now: exit 2 naming them, never 0 ("passed").
    writeFileSync(path.join(dir, "bunfig.toml"), '[shardguard.presets.slow]\nglobs = ["e2e/a.test.ts"]\n');
    const newest = readReport(dir).runId;
    const runsBefore = readdirSync(path.join(dir, ".shardguard", "runs")).sort();
    for (const command of ["run", "list", "bg"]) {
      const none = await runCli(
        [command, "--preset", "slow", "--last-failed", ...(command === "bg" ? ["--local"] : [])],
        { cwd: dir },
      );
      expect(none.code).toBe(2);
      expect(none.stderr).toContain(
        `--last-failed: nothing left to run: none of the 1 files that did not pass in run ${newest} can run now ` +
          `(e2e/b.test.ts is not one of preset slow's files)`,
      );
    }
    // Nothing started: no run directory was added (ids of one second do not sort by time, so compare the sets).
    expect(readdirSync(path.join(dir, ".shardguard", "runs")).sort()).toEqual(runsBefore);
  }, 60_000);

  test("with --preset and no tier named: reruns in the " +
    "tier of the run it reruns, not the preset's default", async () => {
    const tiered = (tier: string, body: string) =>
      `// TIER=${tier}\nimport { test, expect } from "bun:test";\ntest("t", () => { ${body} });\n`;
    const dir = makeSuite({
      "bunfig.toml":
        '[shardguard.presets.slow]\nglobs = ["e2e/*.test.ts"]\n[shardguard.presets.slow.tier]\nenv = "SLOW_TIER"\n' +
        'values = ["gate", "periodic"]\ndefault = "gate"\nguards = ["TIER={tier}"]\n',
      "e2e/g.test.ts": tiered("gate", "expect(process.env.SLOW_TIER).toBe(process.env.SLOW_TIER);"),
      "e2e/p.test.ts": tiered("periodic", "expect(process.env.SLOW_TIER).toBe('gate');"),
    });
    const periodic = await runCli(["run", "--preset", "slow", "--tier=periodic"], { cwd: dir });
    expect(periodic.stderr).toBe("");
    expect(periodic.code).toBe(1);
    const runId = readReport(dir).runId;
    const rerun = await runCli(["run", "--preset", "slow", "--last-failed"], { cwd: dir });
    expect(rerun.stdout).toContain(`tier periodic (from run ${runId}, which --last-failed reruns)`);
    expect(rerun.code).toBe(1);
    const report = readReport(dir);
    expect(report.preset?.tier).toBe("periodic");
    expect(report.shards.map((s) => [s.files[0], s.status])).toEqual([["e2e/p.test.ts", "failed"]]);
    // A tier named on the command line wins: p is not a gate file, so nothing can rerun (exit 2).
    const gate = await runCli(["run", "--preset", "slow", "--last-failed", "--tier=gate"], { cwd: dir });
    expect(gate.code).toBe(2);
    expect(gate.stderr).toContain("e2e/p.test.ts is not one of preset slow's files in tier gate");
  }, 60_000);

  test("two runs started in the same second: the one that started last is the newest, whatever the random part of " +
    "their ids", async () => {
    const dir = makeSuite({ "a.test.ts": pass, "b.test.ts": fail });
    const first = await runCli(["run", "--root", dir]);
    expect(first.code).toBe(1);
    const real = readReport(dir);
    const runs = path.join(dir, ".shardguard", "runs");
    rmSync(path.join(runs, real.runId), { recursive: true });
    // The later run (b failed) gets the id that sorts first; the earlier one passed everything.
    const passedAll = makeReport(
      real.shards.map((s) => ({
        ...s,
        status: "passed" as const,
        tests: s.tests.map((t) => ({ ...t, status: "passed" as const, message: null })),
      })),
      { runId: "20991231T000000Z-ffffff", startedAt: "2099-12-31T00:00:00.100Z", exitCode: 0, root: dir },
    );
    const later = { ...real, runId: "20991231T000000Z-000000", startedAt: "2099-12-31T00:00:00.900Z" };
    for (const r of [passedAll, later]) {
      mkdirSync(path.join(runs, r.runId), { recursive: true });
      writeFileSync(path.join(runs, r.runId, "report.json"), JSON.stringify(r));
    }
    const listed = await runCli(["list", "--root", dir, "--last-failed"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`--last-failed: rerunning 1 file of run ${later.runId}`);
    expect(listed.stdout).toContain("b.test.ts");
    expect(listed.stdout).not.toContain("nothing to rerun");
  }, 60_000);

  test("failed files that were all deleted since: exit 2, not a pass", async () => {
    const dir = makeSuite({ "a.test.ts": pass, "b.test.ts": fail });
    expect((await runCli(["run", "--root", dir])).code).toBe(1);
    rmSync(path.join(dir, "b.test.ts"));
    const r = await runCli(["run", "--root", dir, "--last-failed"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--last-failed: nothing left to run: none of the 1 files that did not pass in run");
    expect(r.stderr).toContain("can run now (b.test.ts no longer exists)");
  }, 60_000);

  test("nothing failed: says so and exits 0; no earlier report: exit 2", async () => {
    const dir = makeSuite({ "a.test.ts": pass });
    const none = await runCli(["run", "--root", dir, "--last-failed"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--last-failed: no earlier report");
    expect((await runCli(["run", "--root", dir])).code).toBe(0);
    const again = await runCli(["run", "--root", dir, "--last-failed"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to rerun: every planned file passed");
  });
});

describe("examples/github/sharded-tests.yml", () => {
  type Step = {
    uses?: string;
    run?: string;
    if?: string;
    id?: string;
    with?: Record<string, unknown>;
    env?: Record<string, string>;
  };
  type Job = {
    needs?: string;
    if?: string;
    env?: Record<string, unknown>;
    strategy?: { "fail-fast"?: boolean; matrix: { slice: number[] } };
    steps: Step[];
  };
  const workflow = Bun.YAML.parse(
    readFileSync(path.join(import.meta.dir, "..", "examples", "github", "sharded-tests.yml"), "utf8"),
  ) as { jobs: Record<string, Job> };
  const { slice, merge } = workflow.jobs as { slice: Job; merge: Job };

  test("N slice jobs run their slice and upload their OUT whatever the outcome", () => {
    expect(slice.strategy!["fail-fast"]).toBe(false);
    expect(slice.strategy!.matrix.slice).toEqual(Array.from({ length: Number(merge.env!.SLICES) }, (_, i) => i + 1));
    // The matrix values reach the shell through env (test/workflows.test.ts checks no ${{ }} is in a script).
    const step = slice.steps.find((s) => s.run?.includes('shardguard run --shard "$SLICE/$SLICES"'))!;
    expect(step.env).toMatchObject({ SLICE: "${{ matrix.slice }}", SLICES: "${{ strategy.job-total }}" });
    const upload = slice.steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"))!;
    expect(upload.if).toBe("always()");
    expect(upload.with!.name).toBe("shardguard-slice-${{ matrix.slice }}");
    expect(String(upload.with!.path)).toContain(".shardguard/report.json");
  });

  test(
    "one merge job downloads them all, merges, publishes " + "the merged JUnit, and fails when a slice is missing",
    async () => {
      expect(merge.needs).toBe("slice");
      expect(merge.if).toContain("always()");
      expect(merge.steps.find((s) => s.uses?.startsWith("actions/download-artifact@"))!.with).toMatchObject({
        pattern: "shardguard-slice-*",
        path: "slices",
      });
      expect(merge.steps.some((s) => s.run?.includes("shardguard merge slices/*"))).toBe(true);
      expect(merge.steps.find((s) => s.uses?.startsWith("dorny/test-reporter@"))!.with).toMatchObject({
        path: "merged/junit.xml",
        "fail-on-empty": true,
      });
      // The check step's own shell, on a download where slice 2 is missing.
      const check = merge.steps.find((s) => s.id === "slices")!.run!;
      const dir = makeSuite({
        "slices/shardguard-slice-1/report.json": "{}",
        "slices/shardguard-slice-3/report.json": "{}",
        "slices/shardguard-slice-4/report.json": "{}",
        "out.txt": "",
      });
      const proc = Bun.spawnSync(["bash", "-e", "-c", check], {
        cwd: dir,
        env: { ...process.env, SLICES: "4", GITHUB_OUTPUT: path.join(dir, "out.txt") },
      });
      expect(proc.exitCode).toBe(0);
      expect(proc.stdout.toString()).toContain("::error title=slice 2/4 missing::");
      expect(readFileSync(path.join(dir, "out.txt"), "utf8")).toBe("missing=1\n");
      const failStep = merge.steps.find((s) => s.if?.includes("steps.slices.outputs.missing == '1'"))!;
      expect(failStep.run).toContain("exit 1");
    },
  );
});
