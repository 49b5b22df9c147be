/**
 * GitHub Actions annotations and step summary (runner/report/github-render.ts,
 * runner/cli/github.ts): one real run of failing, wedged and flaky fixture
 * files with odd characters in names and paths, under GITHUB_ACTIONS=true;
 * the workflow commands are parsed back the way GitHub reads them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { repositoryRoot } from "../runner/engine/github-publish.ts";
import {
  githubAnnotations,
  githubStepSummary,
  escapeData,
  escapeProperty,
  markdownCell,
  MAX_ANNOTATIONS,
  oneScreen,
  SCREEN_CHARS,
} from "../runner/report/github-render.ts";
import { makeRedactor } from "../runner/results/redact.ts";
import type { RunReport } from "../runner/results/report-model.ts";
import { fixtureFiles, makeSuite, readReport, removeSuites, runCli, type CliRun } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

afterAll(removeSuites);

/** One workflow command as GitHub's runner parses it: `::name k=v,k=v::data`, values unescaped. */
interface Command {
  name: string;
  props: Record<string, string>;
  data: string;
}

const unescapeCommand = (s: string) =>
  s.replace(/%3A/g, ":").replace(/%2C/g, ",").replace(/%0D/g, "\r").replace(/%0A/g, "\n").replace(/%25/g, "%");

/**
 * The workflow commands GitHub's runner would process in `stdout`: lines
 * that start with `::` once leading whitespace is trimmed, except those
 * between `::stop-commands::TOKEN` and `::TOKEN::` (which are not returned).
 */
function commands(stdout: string): Command[] {
  let stoppedBy: string | null = null;
  return stdout
    .split(/\r?\n|\r/)
    .map((l) => l.trimStart())
    .filter((l) => {
      if (stoppedBy !== null) {
        if (l === `::${stoppedBy}::`) stoppedBy = null;
        return false;
      }
      const stop = /^::stop-commands::(.+)$/.exec(l);
      if (stop) stoppedBy = stop[1]!;
      return !stop && l.startsWith("::");
    })
    .map((line) => {
      const m = /^::([a-z-]+)(?: ([^:]*))?::(.*)$/.exec(line);
      if (!m) throw new Error(`not a workflow command: ${line}`);
      const props: Record<string, string> = {};
      for (const kv of (m[2] ?? "").split(",").filter(Boolean)) {
        const eq = kv.indexOf("=");
        props[kv.slice(0, eq)] = unescapeCommand(kv.slice(eq + 1));
      }
      return { name: m[1]!, props, data: unescapeCommand(m[3]!) };
    });
}

const SECRET = "sk-live-0123456789abcdef";
const ODD_DIR = "test/odd, dir: 100%";
const FAIL_NAME = "pipe | comma, colon: 100% <b>bold</b> `tick`";
const INJECT_NAME = "inject\n::error::forged";

describe("a run under GitHub Actions: failed, timed-out, never-started, flaky, odd names and paths", () => {
  let dir: string;
  let workspace: string;
  let summaryFile: string;
  let run: CliRun;
  let report: RunReport;
  let cmds: Command[];

  beforeAll(async () => {
    const failing = [
      `import { expect, test } from "bun:test";`,
      `test(${JSON.stringify(FAIL_NAME)}, () => {`,
      `  throw new Error("token " + process.env.MY_API_KEY + " rejected\\n" + "line\\n".repeat(60));`,
      `});`,
      `test(${JSON.stringify(INJECT_NAME)}, () => { expect(1).toBe(2); });`,
      `test("fine", () => {});`,
      ``,
    ].join("\n");
    // The suite lives at WORKSPACE/repo, so file= is "repo/test/…".
    workspace = makeSuite(
      {
        ...Object.fromEntries(Object.entries(fixtureFiles("spin", "flaky")).map(([k, v]) => [`repo/test/${k}`, v])),
        [`repo/${ODD_DIR}/fail.test.ts`]: failing,
      },
      "sg-gh-ws-",
    );
    dir = path.join(workspace, "repo");
    summaryFile = path.join(workspace, "step-summary.md");
    run = await runCli(["run", "--root", dir, "--jobs", "3", "--timeout", "3", "--grace", "1", "--", "--retry", "1"], {
      env: {
        GITHUB_ACTIONS: "true",
        GITHUB_WORKSPACE: workspace,
        GITHUB_STEP_SUMMARY: summaryFile,
        MY_API_KEY: SECRET,
      },
    });
    report = readReport(dir);
    cmds = commands(run.stdout);
  }, 60_000);

  test("the run itself: exit 1, every status the fixture is for", () => {
    expect(run.code).toBe(1);
    const statuses = report.shards.flatMap((s) => s.tests.map((t) => t.status));
    expect(statuses).toContain("failed");
    expect(statuses).toContain("timed-out");
    expect(statuses).toContain("never-started");
    expect(report.shards.flatMap((s) => s.tests).some((t) => t.flaky)).toBe(true);
  });

  test("one ::error per test that did not pass, one ::warning per flaky test, nothing else", () => {
    const notPassed = report.shards
      .flatMap((s) => s.tests)
      .filter((t) => ["failed", "timed-out", "crashed", "never-started"].includes(t.status));
    const flaky = report.shards.flatMap((s) => s.tests).filter((t) => t.flaky);
    expect(cmds.filter((c) => c.name === "error")).toHaveLength(notPassed.length);
    expect(cmds.filter((c) => c.name === "warning")).toHaveLength(flaky.length);
    expect(cmds.every((c) => c.name === "error" || c.name === "warning")).toBe(true);
    // The test name with a newline and "::error::" starts no line of the console.
    expect(run.stdout.split(/\r?\n|\r/).filter((l) => l.trimStart().startsWith("::error::forged"))).toEqual([]);
    // Commands are stopped while shards run, resumed before ours.
    const stop = /^::stop-commands::([0-9a-f]{32})$/m.exec(run.stdout);
    expect(stop).not.toBeNull();
    expect(run.stdout.indexOf(`::${stop![1]}::`)).toBeGreaterThan(run.stdout.indexOf("[1/3] START"));
    expect(run.stdout.indexOf(`::${stop![1]}::`)).toBeLessThan(run.stdout.search(/^::error file=/m));
  });

  test("file is relative to GITHUB_WORKSPACE, with the line, and odd characters survive the round trip", () => {
    const failed = cmds.find((c) => c.props.title === `failed: ${FAIL_NAME}`);
    expect(failed).toBeDefined();
    expect(failed!.props.file).toBe(`repo/${ODD_DIR}/fail.test.ts`);
    expect(failed!.props.line).toBe("2");
    // Its line feed is shown, not escaped into a line break of the annotation's title.
    const injected = cmds.find((c) => c.props.title === "failed: inject\u240a::error::forged");
    expect(injected?.props.line).toBe("5");
  });

  test("messages are redacted, cut to one screen and name the log", () => {
    const failed = cmds.find((c) => c.props.title === `failed: ${FAIL_NAME}`)!;
    expect(run.stdout).not.toContain(SECRET);
    expect(failed.data).toContain("token [redacted:MY_API_KEY] rejected");
    expect(failed.data).toContain("cut to one screen");
    expect(failed.data.length).toBeLessThan(SCREEN_CHARS + 400);
    expect(failed.data).toMatch(/log: repo\/\.shardguard\/runs\/[^/]+\/logs\/shard-\d+-[^\n]+\.log$/);
  });

  test("the wedged file: timed-out and never-started, each at its line", () => {
    const timedOut = cmds.find((c) => c.props.title === "timed-out: spins forever")!;
    expect(timedOut.props.file).toBe("repo/test/spin.test.ts");
    expect(timedOut.props.line).toBe("4");
    expect(timedOut.data).toContain("killed after 3 s wall-clock timeout");
    const never = cmds.find((c) => c.props.title === "never-started: after")!;
    expect(never.props.line).toBe("7");
  });

  test("a flaky test is a ::warning with its failed attempt", () => {
    const flaky = cmds.find((c) => c.name === "warning")!;
    expect(flaky.props.title).toBe("flaky: flaky under retry");
    expect(flaky.props.file).toBe("repo/test/flaky.test.ts");
    expect(flaky.data).toContain("passed after 1 retry");
    expect(flaky.data).toContain("rate limited on the first attempt");
  });

  test("the step summary: counts by status, the tests that did not pass, slowest shards, logs", () => {
    const md = readFileSync(summaryFile, "utf8");
    expect(md).toContain("## shardguard: did not pass (exit 1)");
    expect(md).toMatch(/\| timed-out \| 1 \| 1 \|/);
    expect(md).toMatch(/\| never-started \| 0 \| 1 \|/);
    expect(md).toContain("### Tests that did not pass (4)");
    expect(md).toContain("### Slowest shards");
    expect(md).toContain("### Flaky tests (1)");
    expect(md).not.toContain(SECRET);
    // The row of the odd name: 4 cells, its | and < escaped, so no HTML and no extra column.
    const row = md.split("\n").find((l) => l.startsWith("| failed |") && l.includes("pipe"))!;
    expect(row.split(/(?<!\\)\|/).length - 2).toBe(4);
    expect(row).not.toContain("<b>");
    expect(row).toContain("repo/test/odd, dir: 100%/fail.test.ts:2".replace(/[!-/:-@[-`{-~]/g, (c) => `\\${c}`));
    // The timed-out shard's log, relative to the workspace.
    expect(md).toMatch(/shard \d \(timed-out\): repo\\\/\\\.shardguard\\\/runs\\\//);
  });
});

describe("--annotations off (flag, environment)", () => {
  test("no workflow commands and no step summary", async () => {
    const dir = makeSuite(fixtureFiles("fail"));
    const summaryFile = path.join(dir, "summary.md");
    const env = { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summaryFile };
    const byFlag = await runCli(["run", "--root", dir, "--annotations", "off"], { env });
    expect(byFlag.code).toBe(1);
    const byEnv = await runCli(["run", "--root", dir], { env: { ...env, SHARDGUARD_ANNOTATIONS: "off" } });
    expect(byEnv.code).toBe(1);
    for (const r of [byFlag, byEnv]) expect(commands(r.stdout)).toEqual([]);
    expect(existsSync(summaryFile)).toBe(false);
    // The same run with annotations on does write them (the fixture is not the reason for silence).
    const on = await runCli(["run", "--root", dir], { env });
    expect(commands(on.stdout).length).toBeGreaterThan(0);
    expect(existsSync(summaryFile)).toBe(true);
  }, 60_000);

  test("a bad value exits 2 naming what is accepted", async () => {
    const dir = makeSuite(fixtureFiles("pass"));
    const r = await runCli(["run", "--root", dir, "--annotations", "maybe"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`invalid --annotations "maybe": expected on or off`);
  });
});

describe("escaping and cutting (GitHub's workflow command rules)", () => {
  test("data escapes % CR LF; properties also : and ,", () => {
    expect(escapeData("50% a\r\nb: c, d")).toBe("50%25 a%0D%0Ab: c, d");
    expect(escapeProperty("50% a\r\nb: c, d")).toBe("50%25 a%0D%0Ab%3A c%2C d");
    // % first: an escaped sequence in the input stays literal after unescaping.
    expect(unescapeCommand(escapeProperty("%0A%3A"))).toBe("%0A%3A");
  });

  test("one screen keeps the start and says it cut", () => {
    const long = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    const cut = oneScreen(long);
    expect(cut.startsWith("line 0\nline 1\n")).toBe(true);
    expect(cut).toContain("cut to one screen");
    expect(cut.split("\n").length).toBeLessThanOrEqual(21);
    expect(oneScreen("short")).toBe("short");
    // Never half a surrogate pair.
    const emoji = oneScreen("😀".repeat(SCREEN_CHARS));
    expect(emoji.split("\n")[0]!.length % 2).toBe(0);
  });

  test("a Markdown cell shows line breaks, flattens whitespace and escapes punctuation", () => {
    expect(markdownCell("a|b\n<i>c</i> &\t\t[d](e)")).toBe("a\\|b\u240a\\<i\\>c\\<\\/i\\> \\& \\[d\\]\\(e\\)");
  });
});

describe("githubAnnotations on a report model", () => {
  const redact = makeRedactor({ API_TOKEN: "tok-123456789" });
  const crashed = makeShard({
    index: 1,
    status: "crashed",
    exitCode: null,
    signal: "SIGSEGV",
    reason: "ended by SIGSEGV",
    tests: [
      makeTest({
        name: "dies tok-123456789",
        file: "a.test.ts",
        status: "crashed",
        line: 3,
        failure: { type: "crash", message: "in flight: ended by SIGSEGV" },
      }),
    ],
  });

  test("crashed tests are errors; names redacted; file left out when outside the repository", () => {
    const report = makeReport([crashed], { root: "/elsewhere/project" });
    const lines = githubAnnotations(report, { repoRoot: "/repo", redact });
    expect(lines).toHaveLength(1);
    const [cmd] = commands(lines.join("\n"));
    expect(cmd!.props.file).toBeUndefined();
    expect(cmd!.props.line).toBe("3");
    expect(cmd!.props.title).toBe("crashed: dies [redacted:API_TOKEN]");
  });

  test("past MAX_ANNOTATIONS one more error counts the rest; the summary caps its rows", () => {
    const tests = Array.from({ length: MAX_ANNOTATIONS + 7 }, (_, i) =>
      makeTest({
        name: `t${i}`,
        file: "b.test.ts",
        status: "never-started",
        failure: { type: "never-started", message: "never started" },
      }),
    );
    const report = makeReport([makeShard({ index: 1, status: "timed-out", tests })], { root: "/repo" });
    const lines = githubAnnotations(report, { repoRoot: "/repo" });
    expect(lines).toHaveLength(MAX_ANNOTATIONS + 1);
    expect(lines.at(-1)).toContain("7 more tests did not pass");
    const md = githubStepSummary(report, { repoRoot: "/repo" });
    expect(md).toContain(`… and ${MAX_ANNOTATIONS + 7 - 100} more`);
  });

  test("a short assertion is said once: Bun's details repeat the message, only their stack is added", () => {
    const message =
      'expect(received).toEqual(expected)\n\n  {\n-   "a": 2,\n+   "a": 1,\n  }\n\n- Expected  - 1\n+ Received  + 1\n';
    const failure = {
      type: "failure" as const,
      errorName: "AssertionError",
      message,
      details: `AssertionError: ${message}\n      at f.test.ts:2:36\n`,
    };
    const report = makeReport(
      [
        makeShard({
          index: 1,
          status: "failed",
          tests: [makeTest({ name: "eq", file: "f.test.ts", status: "failed", line: 2, failure })],
        }),
      ],
      { root: "/repo" },
    );
    const [cmd] = commands(githubAnnotations(report).join("\n"));
    expect(cmd!.data.split("expect(received).toEqual(expected)")).toHaveLength(2);
    expect(cmd!.data).toStartWith("expect(received).toEqual(expected)\n\n  {");
    expect(cmd!.data).toContain("+ Received  + 1\n\nat f.test.ts:2:36");
    expect(cmd!.data).not.toContain("cut to one screen");
    // Details that do not repeat the message still follow it.
    const other = makeReport(
      [
        makeShard({
          index: 1,
          status: "failed",
          tests: [
            makeTest({
              name: "x",
              file: "f.test.ts",
              status: "failed",
              failure: { type: "failure", errorName: "Error", message: "boom", details: "at g (f.test.ts:9:1)" },
            }),
          ],
        }),
      ],
      { root: "/repo" },
    );
    expect(commands(githubAnnotations(other).join("\n"))[0]!.data).toStartWith("boom\n\nat g (f.test.ts:9:1)");
  });

  test("repoRoot defaults to the report's root, so {} (or nothing) is enough", () => {
    const report = makeReport([crashed], { root: "/repo" });
    expect(githubStepSummary(report, {})).toBe(githubStepSummary(report, { repoRoot: "/repo" }));
    expect(githubAnnotations(report)).toEqual(githubAnnotations(report, { repoRoot: "/repo" }));
    expect(commands(githubAnnotations(report).join("\n"))[0]!.props.file).toBe("a.test.ts");
  });

  test("the summary's Reports line names every report, report.html too", () => {
    const report = makeReport([crashed], { root: "/repo" });
    const reports = {
      junit: "/repo/.shardguard/junit.xml",
      json: "/repo/.shardguard/report.json",
      ctrf: "/repo/.shardguard/ctrf.json",
      html: "/repo/.shardguard/report.html",
    };
    const line = githubStepSummary(report, { repoRoot: "/repo", reports })
      .split("\n")
      .find((l) => l.startsWith("Reports:"));
    // Markdown-escaped, as GitHub renders the cell.
    for (const name of ["junit", "report\\.json", "ctrf", "HTML \\.shardguard\\/report\\.html"])
      expect(line).toContain(name);
  });

  test("a passing run has no annotations and a short summary", () => {
    const report = makeReport([makeShard({ index: 1, tests: [makeTest({ name: "ok", file: "c.test.ts" })] })], {
      exitCode: 0,
      root: "/repo",
    });
    expect(githubAnnotations(report, { repoRoot: "/repo" })).toEqual([]);
    const md = githubStepSummary(report, { repoRoot: "/repo" });
    expect(md).toContain("## shardguard: passed (exit 0)");
    expect(md).not.toContain("did not pass (");
  });
});

describe("the annotations setting from bunfig.toml and the environment", () => {
  test('[shardguard] annotations = false or "off", SHARDGUARD_ANNOTATIONS=off; default on', async () => {
    const { resolveSettings } = await import("../runner/config/load.ts");
    const { parseArgs } = await import("../runner/config/args.ts");
    const resolve = (bunfig: string | null, env: Record<string, string> = {}, argv: string[] = []) => {
      const dir = makeSuite(bunfig === null ? {} : { "bunfig.toml": bunfig });
      return resolveSettings({ args: parseArgs(argv, "run"), env, cwd: dir, defaultBun: process.execPath }).annotations;
    };
    expect(resolve(null)).toBe(true);
    expect(resolve("[shardguard]\nannotations = false\n")).toBe(false);
    expect(resolve('[shardguard]\nannotations = "off"\n')).toBe(false);
    expect(resolve(null, { SHARDGUARD_ANNOTATIONS: "off" })).toBe(false);
    // Flag > environment > bunfig.toml.
    expect(resolve("[shardguard]\nannotations = false\n", { SHARDGUARD_ANNOTATIONS: "on" })).toBe(true);
    expect(resolve(null, { SHARDGUARD_ANNOTATIONS: "on" }, ["--annotations", "off"])).toBe(false);
    expect(() => resolve('[shardguard]\nannotations = "yes"\n')).toThrow(
      `bunfig.toml [shardguard] annotations "yes": expected on or off`,
    );
  });
});

describe("examples/github/paid-tests.yml", () => {
  const workflow = Bun.YAML.parse(
    readFileSync(path.join(import.meta.dir, "..", "examples", "github", "paid-tests.yml"), "utf8"),
  ) as {
    jobs: Record<string, { steps: { uses?: string; run?: string; if?: string; with?: Record<string, unknown> }[] }>;
  };
  const steps = Object.values(workflow.jobs)[0]!.steps;

  test("runs the paid tier through shardguard", () => {
    // Under the run's deadline (test/workflows.test.ts checks the limits).
    expect(steps.some((s) => s.run?.endsWith(`"\${RUN_DEADLINE_MINUTES}m" bun test --preset gstack-paid`))).toBe(true);
  });

  test("uploads the reports and logs, and publishes JUnit, whatever the outcome", () => {
    const upload = steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"))!;
    expect(upload.if).toBe("always()");
    const paths = String(upload.with!.path);
    for (const p of [".shardguard/junit.xml", ".shardguard/ctrf.json", ".shardguard/runs/*/logs/"])
      expect(paths).toContain(p);
    const publish = steps.find((s) => s.uses?.startsWith("dorny/test-reporter@"))!;
    expect(publish.if).toBe("always()");
    expect(publish.with!.path).toBe(".shardguard/junit.xml");
    expect(publish.with!.reporter).toBe("java-junit");
  });
});

describe("the repository root of file= properties", () => {
  test("GITHUB_WORKSPACE, else the git top level, else the run root", () => {
    const top = makeSuite({ "pkg/test/a.test.ts": "" }, "sg-gh-git-");
    const root = path.join(top, "pkg");
    expect(repositoryRoot(root, { GITHUB_WORKSPACE: "/somewhere/else" })).toBe("/somewhere/else");
    // Not a repository (temp dirs are outside any): the run root.
    expect(repositoryRoot(root, {})).toBe(root);
    const init = spawnSync("git", ["init", "-q", top]);
    expect(init.status).toBe(0);
    expect(repositoryRoot(root, {})).toBe(top);
    mkdirSync(path.join(root, "deeper"));
    expect(repositoryRoot(path.join(root, "deeper"), {})).toBe(top);
  });
});
