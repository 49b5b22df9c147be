/**
 * No stale reports (docs/reports.md, "A refused run"): a run refused with
 * exit 2 after its settings were valid removes the earlier run's reports at
 * the stable paths, so CI cannot upload and publish them as this run's. A
 * usage error before any setting is valid leaves every file alone.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtureFiles, makeSuite, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const STABLE = ["junit.xml", "report.json", "ctrf.json"];

describe("a refused run after an earlier one", () => {
  let dir: string;
  let out: string;
  let firstRunDir: string;

  beforeEach(async () => {
    dir = makeSuite({
      ...fixtureFiles("pass"),
      "bunfig.toml": [
        "[shardguard.presets.checked]",
        'globs = ["*.test.ts"]',
        "[shardguard.presets.checked.preflight]",
        'command = ["sh", "-c", "echo no credentials >&2; exit 3"]',
        "",
      ].join("\n"),
    });
    out = path.join(dir, ".shardguard");
    const first = await runCli(["run", "--root", dir]);
    expect(first.code).toBe(0);
    for (const f of STABLE) expect(existsSync(path.join(out, f))).toBe(true);
    firstRunDir = path.join(out, "runs", readdirSync(path.join(out, "runs"))[0]!);
  }, 30_000);

  const stableLeft = () => STABLE.filter((f) => existsSync(path.join(out, f)));

  test("no test file matched: the stable reports are removed, the earlier run's own copies stay", async () => {
    const r = await runCli(["run", "--root", dir, "nosuch.test.ts"]);
    expect(r.code).toBe(2);
    expect(stableLeft()).toEqual([]);
    for (const f of STABLE) expect(existsSync(path.join(firstRunDir, f))).toBe(true);
  });

  test("a failing preset preflight command (run --preset): removed, and a GitHub annotation and summary say why", async () => {
    const summary = path.join(dir, "summary.md");
    const r = await runCli(["run", "--root", dir, "--preset", "checked"], {
      env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary, GITHUB_WORKSPACE: dir },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("exited 3; no shard started");
    expect(stableLeft()).toEqual([]);
    expect(r.stdout).toMatch(/^::error title=shardguard refused the run \(exit 2\)::preflight .*exited 3; no shard started/m);
    expect(readFileSync(summary, "utf8")).toContain("## shardguard: refused the run (exit 2)");
  });

  test("a usage error before any setting is valid leaves the files alone", async () => {
    for (const argv of [["run", "--root", dir, "--jobs", "0"], ["run", "--root", dir, "--no-such-flag"]]) {
      const r = await runCli(argv);
      expect(r.code).toBe(2);
      expect(stableLeft()).toEqual(STABLE);
    }
  });

  test("a refused report path that is not a shardguard report is never deleted", async () => {
    const testFile = path.join(dir, "pass.test.ts");
    const before = readFileSync(testFile, "utf8");
    const r = await runCli(["run", "--root", dir, "--junit", testFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("it is one of the planned test files");
    expect(readFileSync(testFile, "utf8")).toBe(before);
    // This run's other two stable paths held the earlier run's reports: gone.
    // OUT/junit.xml is not one of this run's paths (--junit moved it): left alone.
    expect(stableLeft()).toEqual(["junit.xml"]);
  });

  test("a file at a report path that only looks like JSON is kept", async () => {
    const json = path.join(out, "report.json");
    writeFileSync(json, '{"tool": {"name": "other"}}\n');
    const r = await runCli(["run", "--root", dir, "nosuch.test.ts"]);
    expect(r.code).toBe(2);
    expect(readFileSync(json, "utf8")).toBe('{"tool": {"name": "other"}}\n');
    expect(existsSync(path.join(out, "junit.xml"))).toBe(false);
  });
});
