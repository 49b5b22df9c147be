/**
 * End-to-end: the real CLI runs real `bun test` children on fixture files in
 * temp directories; assertions read the JSON and JUnit it wrote.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import path from "node:path";
import {
  fixtureFiles,
  makeSuite,
  readReport,
  runCli,
  shardOf,
  survivors,
  waitFor,
  type CliRun,
  removeSuites,
} from "./helpers/cli.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";
import type { RunReport } from "../runner/results/report-model.ts";
import { parseJUnit } from "./helpers/junit-xml.ts";

describe("the issue's three-file run: spin, fail, pass with --jobs 2 --timeout 3 --grace 1", () => {
  let dir: string;
  let run: CliRun;
  let report: RunReport;
  beforeAll(async () => {
    dir = makeSuite(fixtureFiles("spin", "fail", "pass"));
    run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "3", "--grace", "1"]);
    report = readReport(dir);
  });

  test("finishes in under 8 s with exit 1", () => {
    expect(run.code).toBe(1);
    expect(run.ms).toBeLessThan(8_000);
  });

  test("report.json gives timed-out / failed / passed", () => {
    expect(shardOf(report, "spin.test.ts").status).toBe("timed-out");
    expect(shardOf(report, "spin.test.ts").reason).toContain("killed after 3 s wall-clock timeout");
    expect(shardOf(report, "fail.test.ts").status).toBe("failed");
    expect(shardOf(report, "pass.test.ts").status).toBe("passed");
    expect(report.completed).toBe(true);
    expect(report.exitCode).toBe(1);
  });

  test("the spinning file's tests are passed / timed-out / never-started", () => {
    const tests = shardOf(report, "spin.test.ts").tests;
    expect(tests.map((t) => [t.name, t.status])).toEqual([
      ["before", "passed"],
      ["spins forever", "timed-out"],
      ["after", "never-started"],
    ]);
    expect(tests[1]!.durationMs).toBeGreaterThan(2_000);
  });

  test("junit.xml is valid against the XSD and lists every planned file", async () => {
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    const verdict = await validateJUnitXml(xml);
    expect(verdict.errors).toEqual([]);
    expect(verdict.valid).toBe(true);
    const doc = parseJUnit(xml);
    const suites = doc.testsuites.testsuite as { "@_name": string }[];
    expect(suites.map((s) => s["@_name"]).sort()).toEqual(["fail.test.ts", "pass.test.ts", "spin.test.ts"]);
    expect(xml).toContain('type="timeout"');
    expect(xml).toContain('type="never-started"');
  });

  test("no process of the run is left alive", () => {
    expect(survivors(report.runId)).toEqual([]);
  });

  test("the run directory and the inspector socket directory are private (mode 0700)", () => {
    const runDir = path.join(dir, ".shardguard", "runs", report.runId);
    expect(statSync(runDir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(runDir, "sock")).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(runDir, "logs")).mode & 0o777).toBe(0o700);
  });

  test("each shard's output is on disk in its own log", () => {
    for (const shard of report.shards) {
      expect(shard.logPath).not.toBeNull();
      expect(existsSync(shard.logPath!)).toBe(true);
    }
    expect(readFileSync(shardOf(report, "fail.test.ts").logPath!, "utf8")).toContain("fails an assertion");
  });
});

describe("verdicts come from exit status, Bun's JUnit and events, never from printed text", () => {
  let dir: string;
  let run: CliRun;
  let report: RunReport;
  beforeAll(async () => {
    dir = makeSuite(
      fixtureFiles(
        "exit0",
        "load-error",
        "throw-at-load",
        "no-tests",
        "all-skipped",
        "fake-summary",
        "fake-fail-line",
        "grandchild",
        "holds-stdout",
        "flaky",
      ),
    );
    run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "20", "--grace", "1", "--", "--retry", "1"]);
    report = readReport(dir);
  });
  afterAll(() => {
    // The setsid sleeper of holds-stdout escapes the process group by design;
    // the cookie sweep (docs/architecture.md) is what kills it. Don't leave it behind in CI.
    for (const pid of survivors(report.runId)) process.kill(pid, "SIGKILL");
  });

  test("the run exits 1 and every planned file is in the report", () => {
    expect(run.code).toBe(1);
    expect(report.shards.length).toBe(10);
    expect(report.summary.shards.total).toBe(10);
  });

  test("process.exit(0) mid-file is crashed: passed / crashed / never-started", () => {
    const shard = shardOf(report, "exit0.test.ts");
    expect(shard.status).toBe("crashed");
    expect(shard.exitCode).toBe(0);
    expect(shard.tests.map((t) => t.status)).toEqual(["passed", "crashed", "never-started"]);
  });

  test("a file that fails to load is failed with its error message", () => {
    const missing = shardOf(report, "load-error.test.ts");
    expect(missing.status).toBe("failed");
    expect(missing.tests[0]!.failure?.type).toBe("load-error");
    expect(missing.tests[0]!.failure?.message).toContain("this-module-does-not-exist");
    const thrown = shardOf(report, "throw-at-load.test.ts");
    expect(thrown.status).toBe("failed");
    expect(thrown.tests[0]!.failure?.message).toContain("configuration missing at load time");
  });

  test("a file with no tests is an empty file, as plain bun test exits 0 for it: skipped, with a note", () => {
    const shard = shardOf(report, "no-tests.test.ts");
    expect([shard.status, shard.reason]).toEqual(["passed", "passed; no tests in no-tests.test.ts (an empty file)"]);
    expect(shard.tests.map((t) => [t.name, t.status, t.failure])).toEqual([
      ["(whole file)", "skipped", { type: "no-tests", message: "registers no tests: an empty file" }],
    ]);
  });

  test("a file whose tests are all skipped passes", () => {
    const shard = shardOf(report, "all-skipped.test.ts");
    expect(shard.status).toBe("passed");
    expect(shard.tests.map((t) => t.status).sort()).toEqual(["skipped", "todo"]);
  });

  test("a fake summary line does not turn a failure into a pass, nor a fake (fail) line a pass into a failure", () => {
    expect(shardOf(report, "fake-summary.test.ts").status).toBe("failed");
    expect(shardOf(report, "fake-fail-line.test.ts").status).toBe("passed");
  });

  test("a grandchild left in the group is killed with it, reported as a leftover, and the shard still passes", () => {
    const shard = shardOf(report, "grandchild.test.ts");
    expect(shard.status).toBe("passed");
    expect(shard.leftovers.map(({ command, leftGroup }) => ({ command, leftGroup }))).toEqual([
      { command: "sleep 600", leftGroup: false },
    ]);
  });

  test("a grandchild holding stdout open does not hold the shard", () => {
    const shard = shardOf(report, "holds-stdout.test.ts");
    expect(shard.status).toBe("passed");
    expect(shard.durationMs).toBeLessThan(10_000);
  });

  test("a test that passes on its retry is flaky, with one flakyFailure", async () => {
    const shard = shardOf(report, "flaky.test.ts");
    expect(shard.status).toBe("passed");
    const flaky = shard.tests.find((t) => t.name === "flaky under retry")!;
    expect(flaky).toMatchObject({ status: "passed", flaky: true, retries: 1 });
    expect(flaky.attemptFailures).toHaveLength(1);
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    expect(xml.match(/<flakyFailure /g)?.length).toBe(1);
    expect((await validateJUnitXml(xml)).valid).toBe(true);
  });

  test("process.exit(0) at load time is crashed, never 'no tests', even with --pass-with-no-tests", async () => {
    const f = fixtureFiles("exit-at-load", "fail");
    // One shard of two files: the exit ends it before the failing file runs.
    const solo = makeSuite({ "a-exit.test.ts": f["exit-at-load.test.ts"]!, "b-fail.test.ts": f["fail.test.ts"]! });
    const result = await runCli(["run", "--root", solo, "--files-per-shard", "2", "--", "--pass-with-no-tests"]);
    expect(result.code).toBe(1);
    const shard = readReport(solo).shards[0]!;
    expect(shard.status).toBe("crashed");
    expect(shard.tests.some((t) => t.status === "passed")).toBe(false);
    // The batch's log opens with its whole file list, the file that never ran included.
    const head = readFileSync(shard.logPath!, "utf8").split("\n")[0];
    expect(head).toMatch(/^shardguard: shard \d+: a-exit\.test\.ts b-fail\.test\.ts$/);
  });

  test("an empty file alone exits 0, as plain bun test; --empty-files fail fails it, naming the setting", async () => {
    const solo = makeSuite(fixtureFiles("no-tests"));
    expect((await runCli(["run", "--root", solo])).code).toBe(0);
    const strict = await runCli(["run", "--root", solo, "--empty-files", "fail"]);
    expect(strict.code).toBe(1);
    const shard = readReport(solo).shards[0]!;
    expect([shard.status, shard.reason]).toEqual([
      "failed",
      'no tests found in no-tests.test.ts (empty-files = "fail"; --empty-files pass allows it)',
    ]);
    expect(strict.stdout).not.toContain("--pass-with-no-tests");
    expect((await runCli(["run", "--root", solo, "--empty-files", "fail", "--", "--pass-with-no-tests"])).code).toBe(0);
  }, 60_000);
});

describe("kills", () => {
  test("a spin that ignores SIGTERM is SIGKILLed after the grace period, group and all", async () => {
    const dir = makeSuite(fixtureFiles("spin-ignores-sigterm", "pass"));
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "2", "--grace", "1"]);
    const report = readReport(dir);
    const shard = shardOf(report, "spin-ignores-sigterm.test.ts");
    expect(run.code).toBe(1);
    expect(shard.status).toBe("timed-out");
    expect(shard.signal).toBe("SIGKILL");
    expect(shard.reason).toContain("SIGKILL after 1 s grace period");
    expect(shard.tests[0]!.status).toBe("timed-out");
    // Later shards still run after a timeout.
    expect(shardOf(report, "pass.test.ts").status).toBe("passed");
    expect(survivors(report.runId)).toEqual([]);
    // timeout + grace + 1 s bound for the wedged shard, plus the pass shard and start-up.
    expect(shard.durationMs).toBeLessThan(2_000 + 1_000 + 1_000);
  });

  test("SIGINT mid-run: exit 130, unstarted shards never-started, nothing survives", async () => {
    const f = fixtureFiles("slow-pass", "pass", "fail");
    // Sorted plan order: a-slow first, so the two others are still queued.
    const dir = makeSuite({
      "a-slow.test.ts": f["slow-pass.test.ts"]!,
      "b-pass.test.ts": f["pass.test.ts"]!,
      "c-fail.test.ts": f["fail.test.ts"]!,
    });
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "30", "--grace", "1"], {
      onLine: { match: /START a-slow/, act: (pid) => setTimeout(() => process.kill(pid, "SIGINT"), 300) },
    });
    expect(run.code).toBe(130);
    const report = readReport(dir);
    expect(report.cancelledBy).toBe("SIGINT");
    expect(report.completed).toBe(false);
    expect(report.exitCode).toBe(130);
    const slow = shardOf(report, "a-slow.test.ts");
    expect(slow.status).toBe("crashed");
    expect(slow.reason).toContain("run cancelled");
    expect(slow.tests[0]!.status).not.toBe("passed");
    const never = report.shards.filter((s) => s.status === "never-started");
    expect(never.length).toBe(2);
    for (const shard of never) expect(shard.tests[0]!.failure?.message).toContain("run cancelled (SIGINT)");
    expect(await waitFor(() => survivors(report.runId).length === 0, 2_000)).toBe(true);
    expect(run.ms).toBeLessThan(6_000);
  });
});

describe("nothing runs when the input is wrong", () => {
  test("zero matching files exits 2 with 'no test files matched'", async () => {
    const dir = makeSuite({ "readme.md": "no tests here" });
    const run = await runCli(["run", "--root", dir]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("no test files matched");
    expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
  });

  test("an invalid value exits 2 with one line naming it, and no child starts", async () => {
    const dir = makeSuite(fixtureFiles("marker"));
    const marker = path.join(dir, "marker.txt");
    for (const [args, env, needle] of [
      [["--jobs", "0"], {}, "--jobs"],
      [["--timeout", "soon"], {}, "--timeout"],
      [[], { SHARDGUARD_GRACE: "-1" }, "SHARDGUARD_GRACE"],
      [["--bogus"], {}, "--bogus"],
    ] as const) {
      const run = await runCli(["run", "--root", dir, ...args], { env: { ...env, SG_MARKER: marker } });
      expect(run.code).toBe(2);
      const lines = run.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(needle);
      expect(existsSync(marker)).toBe(false);
      expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
    }
  });
});

describe("per-test events under awkward roots", () => {
  test(
    "a root with accented letters, reached through a " + "symlink, still gets passed / timed-out / never-started",
    async () => {
      const real = makeSuite(fixtureFiles("spin"), "sg-ré-");
      const link = `${real}-lïnk`;
      symlinkSync(real, link);
      try {
        const run = await runCli(["run", "--root", link, "--timeout", "2", "--grace", "1"]);
        expect(run.code).toBe(1);
        const shard = readReport(link).shards[0]!;
        expect(shard.testSource).toBe("events");
        expect(shard.tests.map((t) => [t.name, t.status])).toEqual([
          ["before", "passed"],
          ["spins forever", "timed-out"],
          ["after", "never-started"],
        ]);
      } finally {
        rmSync(link, { force: true });
      }
    },
  );
});

describe("-t across a suite", () => {
  test("a file without a matching test passes; a filter that matches nothing anywhere exits 1", async () => {
    const dir = makeSuite({
      "a.test.ts": 'import { test } from "bun:test";\ntest("alpha one", () => {});\ntest("beta", () => {});\n',
      "b.test.ts": 'import { test } from "bun:test";\ntest("gamma", () => {});\n',
    });
    const some = await runCli(["run", "--root", dir, "--", "-t", "alpha"]);
    expect(some.code).toBe(0);
    const report = readReport(dir);
    expect(report.shards.map((s) => s.status)).toEqual(["passed", "passed"]);
    expect(report.summary.tests.passed).toBe(1);
    const none = await runCli(["run", "--root", dir, "--", "-t", "nothing-matches"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain("the -t filter matched no test in any file");
  });
});

describe("a test that changes the working directory", () => {
  test("keeps its file's results (Bun's JUnit then names files relative to the new cwd)", async () => {
    const dir = makeSuite({
      "cwd.test.ts":
        'import { expect, test } from "bun:test";\ntest("moves to /", () => { process.chdir("/"); });\n' +
        'test("then fails", () => { expect(1).toBe(2); });\n',
    });
    const run = await runCli(["run", "--root", dir]);
    expect(run.code).toBe(1);
    const shard = readReport(dir).shards[0]!;
    expect(shard.status).toBe("failed");
    expect(shard.tests.map((t) => [t.name, t.status])).toEqual([
      ["moves to /", "passed"],
      ["then fails", "failed"],
    ]);
  });
});

describe("report paths that an atomic rename would silently replace are refused", () => {
  test("a directory, a symlink, a device or a planned test file as a report path exits 2, nothing runs", async () => {
    const dir = makeSuite({ ...fixtureFiles("marker"), "reports/dir/.keep": "" });
    const marker = path.join(dir, "marker.txt");
    symlinkSync(path.join(dir, "reports", "target.json"), path.join(dir, "reports", "link.json"));
    for (const [flag, value, needle] of [
      ["--junit", path.join(dir, "reports", "dir"), "is a directory"],
      ["--json", path.join(dir, "reports", "link.json"), "is a symbolic link"],
      ["--ctrf", "/dev/null", "is a device, FIFO or socket"],
      ["--junit", path.join(dir, "marker.test.ts"), "is one of the planned test files"],
    ] as const) {
      const run = await runCli(["run", "--root", dir, flag, value], { env: { SG_MARKER: marker } });
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toContain(needle);
      expect(existsSync(marker)).toBe(false);
    }
    expect(readFileSync(path.join(dir, "marker.test.ts"), "utf8")).toContain("leaves a marker");
    expect(statSync("/dev/null").isCharacterDevice()).toBe(true);
  });
});

describe("hostile test names", () => {
  test("ANSI, control characters, ]]>, emoji and a 5000-character name still make valid XML", async () => {
    const dir = makeSuite(fixtureFiles("hostile-names"));
    const run = await runCli(["run", "--root", dir]);
    expect(run.code).toBe(1);
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    const verdict = await validateJUnitXml(xml);
    expect(verdict.errors).toEqual([]);
    expect(xml).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/);
    const report = readReport(dir);
    expect(report.shards[0]!.tests.length).toBe(3);
    expect(report.shards[0]!.tests.some((t) => t.name.endsWith("x".repeat(5000)))).toBe(true);
  });
});

afterAll(removeSuites);
