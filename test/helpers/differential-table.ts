/**
 * The differential table (docs/reports.md), one test file per Bun (test/differential-VERSION.test.ts), so
 * `bun test --parallel` runs the versions side by side: a table of small fixture files whose truth was
 * decided once by hand, run through the real CLI with events on and off. For
 * every file it asserts the per-test statuses in report.json, that junit.xml
 * and ctrf.json say the same, and, where Bun ended normally, that every test
 * of Bun's own JUnit is in ours with the same status.
 *
 * Fixtures are batched into five runs per event mode (plain, `--bail` with
 * two files per shard, `--retry 2`, `--rerun-each 2`, tests longer than 2.2 s),
 * and the whole table runs once per supported Bun (test/helpers/bun-versions.ts,
 * installed from the npm registry; `SG_DIFF_BUNS=1.4.4,1.3.13` skips the others): the
 * truth is the same for every Bun, except where a row's `byBun` says what a Bun
 * gives instead because it knows more or less (docs/bun-behaviour.md).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fixtureFilesIn, makeSuite, readReport, REPO, removeSuites, runCli } from "./cli.ts";
import { validateJUnitXml } from "./xsd.ts";
import { bunBinary, SUPPORTED_BUNS } from "./bun-versions.ts";
import { readBunJUnit } from "../../runner/results/bun-junit.ts";
import type { RunReport, TestStatus } from "../../runner/results/report-model.ts";
import { bunCapabilities } from "../../runner/results/bun-capabilities.ts";
import { parseJUnit } from "./junit-xml.ts";

const DIR = path.join(REPO, "test", "fixtures", "differential");

/** [name, status] per test; `off` when events off must differ (Bun's JUnit or no per-test data). */
interface Truth {
  on: [string, TestStatus][];
  off?: [string, TestStatus][];
  /** Shard status and, when given, an exact reason. */
  shard: string;
  reason?: string;
  /** What a Bun gives instead, by version prefix ("1.3" is every 1.3.x). */
  byBun?: Record<string, { on?: [string, TestStatus][]; off?: [string, TestStatus][] }>;
  /** Exit code of plain `bun test FILE`, checked on every Bun: shardguard must pass exactly where it exits 0. */
  plainExit?: 0 | 1;
}

/** `truth`'s expected entries for Bun `version` in event mode `mode`. */
function expected(truth: Truth, version: string, mode: "on" | "off"): [string, TestStatus][] {
  const over = Object.entries(truth.byBun ?? {}).find(
    ([prefix]) => version === prefix || version.startsWith(`${prefix}.`),
  )?.[1];
  return (mode === "off" ? (over?.off ?? truth.off) : over?.on) ?? truth.on;
}

/**
 * Bun 1.3.x writes each attempt of a retried test into its JUnit
 * (docs/bun-behaviour.md): retries are known without events.
 */
const junitListsAttempts = (version: string) => version.startsWith("1.3.");

/** Whether the table runs on Bun `version`: every supported Bun, or those `SG_DIFF_BUNS` names. */
const picked = (version: string) =>
  (process.env.SG_DIFF_BUNS?.split(",") ?? (SUPPORTED_BUNS as readonly string[])).includes(version);

const WHOLE = "(whole file)";
const TRUTH: Record<string, Record<string, Truth>> = {
  plain: {
    "all-skipped.test.ts": {
      on: [
        ["s1", "skipped"],
        ["s2", "skipped"],
      ],
      shard: "passed",
      reason: "all 2 tests skipped",
    },
    "todo-only.test.ts": { on: [["later", "todo"]], shard: "passed", reason: "all 1 test todo" },
    // Names keep their escape sequences, ESC and BEL shown as control pictures, so no two names collide.
    // Bun 1.4's JUnit drops ESC and BEL and keeps the rest: without events that is all there is.
    // Bun 1.3.x keeps them and writes each once more, as character references, before the name
    // (`name="&#27;&#27;\x1b[31mred…"`, measured): without events that is the name.
    "ansi.test.ts": {
      on: [
        ["\u241b[31mred\u241b[0m passes", "passed"],
        ["\u241b]8;;https://example.com\u2407link\u241b]8;;\u2407 osc", "passed"],
      ],
      off: [
        ["[31mred[0m passes", "passed"],
        ["]8;;https://example.comlink]8;; osc", "passed"],
      ],
      byBun: {
        "1.3": {
          off: [
            ["\u241b\u241b\u241b[31mred\u241b[0m passes", "passed"],
            ["\u241b\u2407\u241b\u2407\u241b]8;;https://example.com\u2407link\u241b]8;;\u2407 osc", "passed"],
          ],
        },
      },
      shard: "passed",
    },
    // A failed hook keeps Bun's name; the tests under a failed beforeAll never ran (Bun counts only the hook).
    "hook-before-throws.test.ts": {
      on: [
        ["(unnamed)", "failed"],
        ["t1", "never-started"],
        ["t2", "never-started"],
      ],
      off: [["(unnamed)", "failed"]],
      shard: "failed",
    },
    "hook-after-throws.test.ts": {
      on: [
        ["p", "passed"],
        ["(unnamed)", "failed"],
      ],
      shard: "failed",
    },
    "hook-describe.test.ts": {
      on: [
        ["top", "passed"],
        ["ba > (unnamed)", "failed"],
        ["aa > z", "passed"],
        ["aa > (unnamed)", "failed"],
        ["be > w", "failed"],
        ["ae > v", "failed"],
        ["last", "passed"],
        ["ba > x", "never-started"],
        ["ba > inner > y", "never-started"],
      ],
      off: [
        ["top", "passed"],
        ["ba > (unnamed)", "failed"],
        ["aa > z", "passed"],
        ["aa > (unnamed)", "failed"],
        ["be > w", "failed"],
        ["ae > v", "failed"],
        ["last", "passed"],
      ],
      shard: "failed",
    },
    "hook-nested-each.test.ts": {
      on: [
        ["outer > o1", "passed"],
        ["outer > postgres > (unnamed)", "failed"],
        ["outer > o2", "passed"],
        ["last", "passed"],
        ["outer > postgres > row 1", "never-started"],
        ["outer > postgres > row 2", "never-started"],
        ["outer > postgres > grp a > in", "never-started"],
        ["outer > postgres > grp b > in", "never-started"],
      ],
      off: [
        ["outer > o1", "passed"],
        ["outer > postgres > (unnamed)", "failed"],
        ["outer > o2", "passed"],
        ["last", "passed"],
      ],
      shard: "failed",
    },
    // Files that register no tests: plain `bun test` exits 0 for them on every supported Bun, alone and in a run.
    "empty.test.ts": {
      on: [[WHOLE, "skipped"]],
      shard: "passed",
      reason: "passed; no tests in empty.test.ts (an empty file)",
    },
    "describe-only.test.ts": {
      on: [[WHOLE, "skipped"]],
      shard: "passed",
      reason: "passed; no tests in describe-only.test.ts (an empty file)",
    },
    "env-guard-return.test.ts": {
      on: [[WHOLE, "skipped"]],
      shard: "passed",
      reason: "passed; no tests in env-guard-return.test.ts (an empty file)",
    },
    "env-guard-skipif.test.ts": {
      on: [
        ["db > connects", "skipped"],
        ["db > queries", "skipped"],
      ],
      shard: "passed",
      reason: "all 2 tests skipped",
    },
    "skip-describe.test.ts": {
      on: [
        ["off > real", "skipped"],
        ["on", "passed"],
      ],
      shard: "passed",
    },
    "only.test.ts": {
      on: [
        ["b", "passed"],
        ["a", "skipped"],
        ["d > c", "skipped"],
      ],
      off: [["b", "passed"]],
      shard: "passed",
    },
    "kinds.test.ts": {
      on: [
        ["td", "todo"],
        ["fl", "passed"],
        ["each 1", "passed"],
        ["each 2", "passed"],
        ["c1", "passed"],
        ["c2", "failed"],
        ["sk", "skipped"],
        ["dtodo > inner", "todo"],
      ],
      shard: "failed",
    },
    "spin-after-all.test.ts": {
      on: [
        ["passes", "passed"],
        ["afterAll hook", "timed-out"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    "spin-before-all.test.ts": {
      on: [
        ["t1", "never-started"],
        ["beforeAll hook", "timed-out"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    "spin-describe-before-all.test.ts": {
      on: [
        ["a", "passed"],
        ["d > b", "never-started"],
        ["hook between tests", "timed-out"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    "spin-at-load.test.ts": { on: [[WHOLE, "timed-out"]], shard: "timed-out" },
    // Bun sends a test's start before its beforeEach and its end after its afterEach: a hang in either is the test's.
    "spin-before-each.test.ts": {
      on: [
        ["t1", "timed-out"],
        ["t2", "never-started"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    "spin-after-each.test.ts": {
      on: [
        ["t1", "timed-out"],
        ["t2", "never-started"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    // Entries come in Bun's found order: top-level tests before the tests of describe blocks.
    "spin-describe-after-all.test.ts": {
      on: [
        ["a", "passed"],
        ["c", "never-started"],
        ["d > b", "passed"],
        ["hook between tests", "timed-out"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    // Events must not change what a test observes: Bun's connect mode keeps plain `bun test`'s transpiler
    // (docs/bun-behaviour.md).
    "source-text.test.ts": {
      on: [
        ["source text > inlined as plain bun test prints it", "passed"],
        ["source text > no inspector flag in execArgv", "passed"],
        ["source text > no inspector variable in process.env", "passed"],
      ],
      shard: "passed",
    },
    "forge-in-test.test.ts": {
      on: [
        ["forges", "crashed"],
        ["fails", "never-started"],
      ],
      off: [[WHOLE, "crashed"]],
      shard: "crashed",
    },
    // Module code after the registrations forged the report: no test started, so
    // the code in flight is named as a beforeAll would be.
    "forge-at-load.test.ts": {
      on: [
        ["one", "never-started"],
        ["two", "never-started"],
        ["beforeAll hook", "crashed"],
      ],
      off: [[WHOLE, "crashed"]],
      shard: "crashed",
    },
    // A test's work still pending at the end: the preload's end of the run
    // must not give it a turn plain bun test does not.
    "late-timeout-reject.test.ts": {
      on: [["late", "passed"]],
      shard: "passed",
      reason: "all tests passed",
      plainExit: 0,
    },
    "late-immediate-throw.test.ts": {
      on: [
        ["late", "passed"],
        [WHOLE, "failed"],
      ],
      shard: "failed",
      plainExit: 1,
    },
    "late-microtask-reject.test.ts": { on: [["late", "failed"]], shard: "failed", plainExit: 1 },
  },
  bail: {
    "a-bail-fails.test.ts": {
      on: [
        ["ok", "passed"],
        ["bad", "failed"],
        ["unreached", "never-started"],
      ],
      off: [
        ["ok", "passed"],
        ["bad", "failed"],
      ],
      shard: "failed",
    },
    "b-bail-later.test.ts": { on: [[WHOLE, "never-started"]], shard: "failed" },
    "c-spin-after-all.test.ts": {
      on: [
        ["passes", "passed"],
        ["afterAll hook", "timed-out"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    // Batched with the wedged file and never started there: run again in a fresh shard (bench/README.md).
    "d-after-spin.test.ts": { on: [["after the spin", "passed"]], shard: "passed" },
  },
  retry: {
    "flaky.test.ts": {
      on: [
        ["flaky", "passed"],
        ["stable", "passed"],
      ],
      shard: "passed",
    },
  },
  // Tests longer than 2^31 ns, whose elapsed Bun sends wrapped (docs/bun-behaviour.md).
  long: {
    "long-then-spin.test.ts": {
      on: [
        ["passes after 2.3 s", "passed"],
        ["fails after 2.3 s", "failed"],
        ["spins", "timed-out"],
        ["never reached", "never-started"],
      ],
      off: [[WHOLE, "timed-out"]],
      shard: "timed-out",
    },
    "long-ends.test.ts": {
      on: [
        ["passes after 2.4 s", "passed"],
        ["fails after 2.25 s", "failed"],
      ],
      shard: "failed",
    },
  },
  rerun: {
    "rerun.test.ts": {
      on: [
        ["passes", "passed"],
        ["fails", "failed"],
        ["skipped", "skipped"],
        ["passes", "passed"],
        ["fails", "failed"],
        ["skipped", "skipped"],
      ],
      shard: "failed",
    },
  },
};

const RUNS: Record<string, { folder: string; args: string[] }> = {
  plain: { folder: DIR, args: ["--jobs", "4", "--timeout", "2", "--grace", "1"] },
  bail: {
    folder: path.join(DIR, "bail"),
    args: ["--jobs", "2", "--timeout", "2", "--grace", "1", "--files-per-shard", "2", "--", "--bail"],
  },
  // Bun refuses --retry together with --rerun-each.
  retry: { folder: path.join(DIR, "retry"), args: ["--jobs", "1", "--timeout", "20", "--", "--retry", "2"] },
  rerun: { folder: path.join(DIR, "rerun"), args: ["--jobs", "1", "--timeout", "20", "--", "--rerun-each", "2"] },
  long: { folder: path.join(DIR, "long"), args: ["--jobs", "2", "--timeout", "7", "--grace", "1"] },
};

const MODES = ["on", "off"] as const;

/** The `bun test` flag of a run this Bun lacks (results/bun-capabilities.ts): such a run is refused, exit 2. */
function lackedFlag(version: string, run: string): string | null {
  const caps = bunCapabilities(version);
  if (run === "bail" && !caps.junitUnderBail) return "--bail";
  if (run === "retry" && !caps.retryFlag) return "--retry";
  return null;
}

interface Outcome {
  /** The refusal's stderr, when the run was refused. */
  refused?: string;
  dir: string;
  report: RunReport;
  junit: string;
  ctrf: { results: { tests: { name: string; rawStatus: string; filePath: string }[] } };
}
const outcomes = new Map<string, Outcome>();

/** Runs every batch of the table on Bun `version`; outcomes keyed `version/run/mode`. */
async function runTable(version: string): Promise<void> {
  const bun = await bunBinary(version);
  // The first start of a Bun just installed reads its 100 MB from disk: on a loaded machine
  // seconds, past the table's 2 s timeouts. Read once here, the shards start as usual.
  execFileSync(bun, ["--version"]);
  // Three lanes side by side: the plain runs one mode after the other (26 shards each), both long runs at once
  // (each waits 7 s on sleeps and a wedge, not on a core), the short runs one after another.
  const one = async (run: string, mode: (typeof MODES)[number]) => {
    const dir = makeSuite(fixtureFilesIn(RUNS[run]!.folder), "sg-diff-");
    const args = RUNS[run]!.args;
    const split = args.indexOf("--");
    const ours = split < 0 ? args : args.slice(0, split);
    const bunFlags = split < 0 ? [] : args.slice(split);
    const r = await runCli(
      ["run", "--root", dir, "--bun", bun, ...ours, ...(mode === "off" ? ["--no-test-events"] : []), ...bunFlags],
      {
        limitMs: 30_000,
        // Under CI Bun refuses test.only (a load error); the table decides the local behaviour.
        env: { CI: "false" },
      },
    );
    if (r.code === 2) {
      outcomes.set(`${version}/${run}/${mode}`, { refused: r.stderr, dir } as Outcome);
      return;
    }
    const out = path.join(dir, ".shardguard");
    outcomes.set(`${version}/${run}/${mode}`, {
      dir,
      report: readReport(dir),
      junit: readFileSync(path.join(out, "junit.xml"), "utf8"),
      ctrf: JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8")),
    });
  };
  await Promise.all([
    (async () => {
      await one("plain", "on");
      await one("plain", "off");
    })(),
    Promise.all(MODES.map((mode) => one("long", mode))),
    (async () => {
      for (const run of ["bail", "retry", "rerun"]) for (const mode of MODES) await one(run, mode);
    })(),
  ]);
}

/** Status of a testcase as our JUnit encodes it (docs/reports.md). */
function junitStatus(tc: Record<string, unknown>): string {
  const child = (tag: string) => tc[tag] as Record<string, string> | undefined;
  if (child("failure")) return "failed";
  const error = child("error");
  const errorStatus: Record<string, string> = {
    timeout: "timed-out",
    crash: "crashed",
    "never-started": "never-started",
  };
  if (error) return errorStatus[error["@_type"] ?? ""] ?? `error:${error["@_type"]}`;
  const skipped = tc.skipped as Record<string, string> | string | undefined;
  if (skipped !== undefined) return typeof skipped === "object" && skipped["@_type"] === "todo" ? "todo" : "skipped";
  return "passed";
}

/** Our JUnit's testcases of a file, as [name without the " (n)" duplicate suffix, status]. */
function junitCases(text: string, file: string): [string, string][] {
  const suites = parseJUnit(text).testsuites.testsuite as { "@_name": string; testcase: Record<string, unknown>[] }[];
  const suite = suites.find((s) => s["@_name"] === file);
  return (suite?.testcase ?? []).map((tc) => [String(tc["@_name"]).replace(/ \(\d+\)$/, ""), junitStatus(tc)]);
}

/** The whole table on Bun `version`, as one describe block; call it once at a test file's top level. */
export function defineDifferentialTable(version: string): void {
  afterAll(removeSuites);
  (picked(version) ? describe : describe.skip)(`Bun ${version}`, () => {
    beforeAll(() => runTable(version), 120_000);
    for (const [run, files] of Object.entries(TRUTH)) {
      for (const mode of MODES) {
        const lacked = lackedFlag(version, run);
        if (lacked !== null) {
          test(`${run} run, events ${mode}: refused, exit 2, one line naming ${lacked}`, () => {
            const { refused } = outcomes.get(`${version}/${run}/${mode}`)!;
            expect(refused?.trim().split("\n")).toHaveLength(1);
            expect(refused).toContain(`Bun ${version} has no bun test flag ${lacked} (`);
          });
          continue;
        }
        describe(`${run} run, events ${mode}`, () => {
          for (const [file, truth] of Object.entries(files)) {
            const want = expected(truth, version, mode);
            test(`${file}: ${want.map(([n, s]) => `${n}=${s}`).join(", ")}`, () => {
              const { report, junit, ctrf } = outcomes.get(`${version}/${run}/${mode}`)!;
              const shard = report.shards.find((s) => s.files.includes(file))!;
              const mine = shard.tests.filter((t) => t.file === file);
              if (JSON.stringify(mine.map((t) => [t.name, t.status])) !== JSON.stringify(want)) {
                // Evidence for a diagnosis when a run under load disagrees with the table.
                const journal = shard.logPath!.replace(/\.log$/, ".events.jsonl");
                const events = (() => {
                  try {
                    return readFileSync(journal, "utf8");
                  } catch {
                    return "(no event journal)";
                  }
                })();
                console.error(`${file}: reason ${shard.reason}\nevents:\n${events}`);
              }
              expect(mine.map((t) => [t.name, t.status])).toEqual(want);
              expect(shard.status).toBe(truth.shard as never);
              // Every Bun names why a test failed (1.3.x's JUnit has no message: the events give it).
              if (mode === "on")
                expect(mine.filter((t) => t.status === "failed" && !t.failure?.message).map((t) => t.name)).toEqual([]);
              if (truth.reason) expect(shard.reason).toBe(truth.reason);
              // The three reports agree.
              expect(junitCases(junit, file)).toEqual(want);
              expect(ctrf.results.tests.filter((t) => t.filePath === file).map((t) => [t.name, t.rawStatus])).toEqual(
                want,
              );
            });
          }

          test("junit.xml is valid against the XSD", async () => {
            expect((await validateJUnitXml(outcomes.get(`${version}/${run}/${mode}`)!.junit)).errors).toEqual([]);
          });

          test("where Bun ended normally, every test of Bun's own JUnit is in ours with the same status", () => {
            const { report } = outcomes.get(`${version}/${run}/${mode}`)!;
            let compared = 0;
            for (const shard of report.shards.filter(
              (s) => s.testSource === "junit" || s.testSource === "junit+events",
            )) {
              const bunFile = path.join(
                path.dirname(path.dirname(shard.logPath!)),
                "junit",
                `shard-${shard.index}.xml`,
              );
              for (const { file, tests: all } of readBunJUnit(readFileSync(bunFile, "utf8"))) {
                // Bun 1.3.x lists a retried test's failed attempts before its final one: compare the final ones.
                const attempt = (i: number) =>
                  run === "retry" &&
                  junitListsAttempts(version) &&
                  all[i]!.status === "failed" &&
                  all[i + 1]?.name === all[i]!.name &&
                  all[i + 1]?.line === all[i]!.line;
                const tests = all.filter((_, i) => !attempt(i));
                const ours = shard.tests.filter((t) => t.file === file);
                // Bun's hook entries ("(unnamed)", no line): only failing ones are kept, under Bun's name.
                const hook = (t: { name: string; line?: number }) =>
                  t.line === undefined && /(^| > )\(unnamed\)$/.test(t.name);
                const bunHooks = tests.filter(hook);
                const bunTests = tests.filter((t) => !bunHooks.includes(t));
                const ourTests = ours.filter((t) => !hook(t));
                expect(ourTests.slice(0, bunTests.length).map((t) => [t.line, t.status])).toEqual(
                  bunTests.map((t) => [t.line, t.status]),
                );
                expect(ours.filter(hook).map((t) => [t.name, t.status])).toEqual(
                  bunHooks.filter((t) => t.status === "failed").map((t) => [t.name, "failed"]),
                );
                // Drop-in parity: our failed entries are Bun's failed testcases, no more (a test under a
                // failed beforeAll never ran); an error between tests, which Bun counts apart, is a synthetic entry.
                expect(ours.filter((t) => t.status === "failed" && !t.synthetic).length).toBe(
                  tests.filter((t) => t.status === "failed").length,
                );
                compared += bunTests.length;
              }
            }
            expect(compared).toBeGreaterThan(0);
          });
        });
      }
    }

    test("plain bun test FILE exits as the table says, and shardguard passes exactly those that exit 0", async () => {
      const bun = await bunBinary(version);
      for (const [run, files] of Object.entries(TRUTH)) {
        const dir = outcomes.get(`${version}/${run}/on`)!.dir;
        for (const [file, truth] of Object.entries(files)) {
          if (truth.plainExit === undefined) continue;
          const plain = spawnSync(bun, ["test", `./${file}`], {
            cwd: dir,
            env: { ...process.env, CI: "false" },
            encoding: "utf8",
            timeout: 30_000,
          });
          expect([file, plain.status]).toEqual([file, truth.plainExit]);
          expect([file, truth.shard === "passed"]).toEqual([file, truth.plainExit === 0]);
        }
      }
    }, 60_000);

    test("a killed file that was loading gets the time its shard ran", () => {
      for (const mode of MODES) {
        const shard = outcomes
          .get(`${version}/plain/${mode}`)!
          .report.shards.find((s) => s.files.includes("spin-at-load.test.ts"))!;
        expect(shard.tests[0]!.durationMs).toBeGreaterThan(1_500);
        expect(shard.tests[0]!.durationMs).toBeLessThanOrEqual(shard.durationMs);
      }
    });

    // Refused above where this Bun has no --retry.
    (lackedFlag(version, "retry") === null ? test : test.skip)(
      "retries: flaky with one retry under events; without " + "them, only where Bun's JUnit lists attempts (1.3.x)",
      () => {
        const flaky = (mode: string) =>
          outcomes.get(`${version}/retry/${mode}`)!.report.shards[0]!.tests.find((t) => t.name === "flaky")!;
        expect([flaky("on").retries, flaky("on").flaky, flaky("on").attemptFailures.length]).toEqual([1, true, 1]);
        expect([flaky("off").retries, flaky("off").flaky]).toEqual(
          junitListsAttempts(version) ? [1, true] : [0, false],
        );
        expect(outcomes.get(`${version}/retry/on`)!.junit).toContain("<flakyFailure");
      },
    );
  });
}
