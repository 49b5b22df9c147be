/**
 * The gstack-paid preset as a drop-in, end to end: a gstack-shaped git
 * repository in a temp dir (test/helpers/gstack-repo.ts), set up by
 * `shardguard init`, and real `bun test` invocations whose preload hands the
 * run to shardguard, which runs real shard children.
 *
 * The tests run in order and share the repository; each one that changes
 * its git state puts it back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { RunReportSchema, type RunReport } from "../runner/results/report-model.ts";
import { BUN, buildGstackRepo, CLI, REPO, type GstackRepo } from "./helpers/gstack-repo.ts";
import { tempDir } from "./helpers/cli.ts";

let repo: GstackRepo;
const out = () => path.join(repo.dir, ".shardguard");
const report = (): RunReport =>
  RunReportSchema.parse(JSON.parse(readFileSync(path.join(out(), "report.json"), "utf8")));
const junit = () => readFileSync(path.join(out(), "junit.xml"), "utf8");
const shardguardLines = (text: string) => text.split("\n").filter((l) => l.startsWith("shardguard: "));

beforeAll(() => {
  repo = buildGstackRepo();
});
afterAll(() => repo?.remove());

/** The report without what differs from run to run (ids, times, paths of the run directory). */
/**
 * A report without what differs between any two runs: ids, times, paths, and
 * what depends on whether a shard's inspector events arrived (testSource,
 * and the line, which for these helper-defined tests only events can prove
 * wrong). Under load a short shard can lose its events (docs/bun-behaviour.md);
 * statuses never depend on them here, since Bun's JUnit decides a normal end.
 */
function stableReport(r: RunReport): unknown {
  const drop = new Set([
    "runId",
    "startedAt",
    "finishedAt",
    "durationMs",
    "logPath",
    "testSource",
    "line",
    "timeline",
    "resources",
  ]);
  const strip = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(strip)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([k]) => !drop.has(k))
              .map(([k, x]) => [k, strip(x)]),
          )
        : v;
  return strip(r);
}

const stableJUnit = (xml: string) => xml.replace(/ (time|timestamp)="[^"]*"/g, ` $1="…"`).replace(/ line="\d+"/g, "");

describe("gstack-paid drop-in on a clean main branch", () => {
  test(
    "plain `bun test` is untouched: every file runs " + "in-process, paid tests self-skip, shardguard writes nothing",
    () => {
      repo.clean();
      const r = repo.run([BUN, "test"]);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("(pass) a free unit test");
      expect(r.stderr).toContain("(pass) shardguard preset gstack-paid resolves and matches at least one file");
      expect(r.stderr).toContain("(skip) skill-e2e-beta > beta-flow");
      expect(shardguardLines(r.stdout + r.stderr)).toEqual([]);
      expect(existsSync(out())).toBe(false);
      expect(repo.ranTests()).toEqual([]);
    },
  );

  test(
    "`bun test --preset gstack-paid` and the legacy `bun run " +
      "test:gate` run the same plan and write the same reports",
    () => {
      repo.clean();
      const viaPreset = repo.run([BUN, "test", "--preset", "gstack-paid"]);
      expect(viaPreset.code).toBe(0);
      const presetReport = report();
      const presetJUnit = junit();
      const presetRan = repo.ranTests();
      expect(repo.agentPings()).toBe(1);

      repo.clean();
      const viaLegacy = repo.run([BUN, "run", "test:gate"]);
      expect(viaLegacy.code).toBe(0);
      const legacyReport = report();
      const legacyRan = repo.ranTests();
      expect(repo.agentPings()).toBe(1);

      // What each run printed about its plan, apart from how the preset was chosen and the run id.
      const planOf = (text: string) =>
        shardguardLines(text)
          .filter(
            (l) =>
              !l.startsWith("shardguard: preset ") &&
              !l.startsWith("shardguard: run ") &&
              !l.startsWith("shardguard: shard flags: "),
          )
          .map((l) =>
            l
              .replace(/\(bun test --max-concurrency 15 shared by 4 jobs\)/, "(preset gstack-paid)")
              .replace(/passed in [\d.]+s$/, "passed in …s"),
          );
      expect(planOf(viaLegacy.stdout)).toEqual(planOf(viaPreset.stdout));
      expect(viaPreset.stdout).toContain("tier gate (from default)");
      expect(viaLegacy.stdout).toContain("tier gate (from EVALS_TIER)");
      expect(viaLegacy.stdout).toContain(
        "max-concurrency 4 per shard (bun test --max-concurrency 15 shared by 4 jobs)",
      );
      // The shard flags differ by what the old line did not have: the preset's per-test --timeout.
      expect(viaPreset.stdout).toContain(
        "shardguard: shard flags: --retry=1 --concurrent --max-concurrency=4 --timeout=1800000\n",
      );
      expect(viaLegacy.stdout).toContain("shardguard: shard flags: --retry=1 --concurrent --max-concurrency=4\n");

      // The reports agree on everything but how the preset was reached.
      expect(presetReport.preset).toEqual({
        name: "gstack-paid",
        via: "--preset",
        tier: "gate",
        selection: "run all (no changes vs main)",
      });
      expect(legacyReport.preset?.via).not.toBe("--preset");
      const sameFlags = (r: RunReport) => ({
        ...r,
        preset: null,
        settings: { ...r.settings, bunArgs: r.settings.bunArgs.filter((a) => !a.startsWith("--timeout=")) },
      });
      expect(stableReport(sameFlags(legacyReport))).toEqual(stableReport(sameFlags(presetReport)));
      expect(stableJUnit(junit())).toBe(stableJUnit(presetJUnit));

      // Every paid file of the gate tier ran in its own process; gamma (periodic only) was left out.
      expect(presetReport.shards.map((s) => [s.files, s.status])).toEqual([
        [["test/skill-e2e-alpha.test.ts"], "passed"],
        [["test/skill-e2e-beta.test.ts"], "passed"],
        [["test/skill-llm-eval.test.ts"], "passed"],
      ]);
      expect(presetReport.settings.bunArgs).toEqual([
        "--retry=1",
        "--concurrent",
        "--max-concurrency=4",
        "--timeout=1800000",
      ]);
      for (const [ran, flags] of [
        [presetRan, ["--retry=1", "--concurrent", "--max-concurrency=4", "--timeout=1800000"]],
        [legacyRan, ["--retry=1", "--concurrent", "--max-concurrency=4"]],
      ] as const) {
        expect(ran.map((t) => t.name).sort()).toEqual(["alpha-basic", "beta-flow", "llm-judge"]);
        expect(new Set(ran.map((t) => t.pid)).size).toBe(3);
        for (const t of ran) {
          // Where gstack's own sharded runner puts it: the project's eval directory, one per file stem.
          const slug = t.file;
          // One agent preflight in the parent (gstack's test/helpers/anthropic-preflight.ts); shards skip theirs.
          expect(t).toMatchObject({ EVALS: "1", EVALS_TIER: "gate", SHARDGUARD_SHARD: "1", EVALS_PREFLIGHT_OK: "1" });
          expect(t.GSTACK_EVAL_DIR).toBe(
            path.join(repo.dir, ".evals-home", "projects", "fixture", "evals", "shards", slug),
          );
          expect(JSON.parse(t.EVALS_SELECTION_JSON!)).toEqual({
            version: 1,
            selected: null,
            reason: "run all (no changes vs main)",
          });
          if (process.platform === "linux") {
            expect(t.argv).toContain(path.join(repo.dir, "test", `${t.file}.test.ts`));
            expect(
              t.argv.filter((a) => flags.some((f) => a.split("=")[0] === f.split("=")[0]) || a.startsWith("--timeout")),
            ).toEqual([...flags]);
          }
        }
      }
    },
  );

  test("`shardguard list --preset gstack-paid` prints the plan and the tier exclusion, and runs nothing", () => {
    repo.clean();
    const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("shard 1/3 [test-skill-e2e-alpha]");
    expect(r.stdout).toContain("test/skill-e2e-gamma.test.ts  [tier gate: declares tier periodic only]");
    expect(r.stdout).not.toContain("would skip");
    expect(existsSync(path.join(out(), "report.json"))).toBe(false);
    expect(repo.ranTests()).toEqual([]);
    const periodic = repo.run([BUN, CLI, "list", "--preset", "gstack-paid", "--tier", "periodic"]);
    expect(periodic.stdout).toContain("test/skill-e2e-alpha.test.ts  [tier periodic: declares tier gate only]");
    expect(periodic.stdout).toContain("shard 3/4 [test-skill-e2e-gamma]");
  });

  test(
    "GSTACK_EVAL_DIR set by the caller is the base of every " +
      "shard's directory; the project's function is not called",
    () => {
      repo.clean();
      const base = path.join(repo.dir, "given-evals");
      const r = repo.run([BUN, "test", "--preset", "gstack-paid"], {
        GSTACK_EVAL_DIR: base,
        FIXTURE_EVAL_STORE_FAIL: "1",
      });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        `shardguard: shard directories: GSTACK_EVAL_DIR=${path.join(base, "shards")}/<file name>`,
      );
      const ran = repo.ranTests();
      expect(ran.length).toBe(3);
      for (const t of ran) expect(t.GSTACK_EVAL_DIR).toBe(path.join(base, "shards", t.file));
    },
  );

  test("the command line's own bun test flags become the flags of every shard", () => {
    repo.clean();
    const r = repo.run(
      [
        BUN,
        "test",
        "-t",
        "a",
        "--bail",
        "--timeout",
        "60000",
        "--max-concurrency",
        "3",
        "test/skill-e2e-alpha.test.ts",
        "test/skill-e2e-beta.test.ts",
      ],
      { EVALS: "1", EVALS_TIER: "gate" },
    );
    expect(r.code).toBe(0);
    const rep = report();
    expect(rep.shards.map((s) => s.files[0])).toEqual(["test/skill-e2e-alpha.test.ts", "test/skill-e2e-beta.test.ts"]);
    expect(rep.settings.timeoutMs).toBe(60_000);
    // The line's own flags, in its order: none of the preset's (--retry, --concurrent) added.
    expect(rep.settings.bunArgs).toEqual(["--test-name-pattern=a", "--bail", "--timeout=60000", "--max-concurrency=1"]);
    expect(r.stdout).toContain("timeout 60s (bun test --timeout)");
    expect(
      repo
        .ranTests()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["alpha-basic", "beta-flow"]);
  });

  test(
    "EVALS_CONCURRENCY sets --max-concurrency inside each " +
      "shard and EVALS_JOBS the shard processes, never each other",
    () => {
      repo.clean();
      const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"], { EVALS_CONCURRENCY: "15", EVALS_JOBS: "2" });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("jobs 2 (EVALS_JOBS), max-concurrency 15 per shard (EVALS_CONCURRENCY)");
      expect(r.stdout).toContain("shard flags: --retry=1 --concurrent --max-concurrency=15 --timeout=1800000");
    },
  );
});

describe("gstack-paid fails closed before spending anything", () => {
  /** Runs `bun test --preset gstack-paid` expecting exit 2 with one line naming `needle`, and no child. */
  function refused(env: Record<string, string>, needle: string, extra: string[] = []): void {
    repo.clean();
    const r = repo.run([BUN, "test", "--preset", "gstack-paid", ...extra], env);
    expect(r.code).toBe(2);
    const lines = shardguardLines(r.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(needle);
    expect(shardguardLines(r.stdout)).toEqual([]);
    expect(existsSync(out())).toBe(false);
    expect(repo.ranTests()).toEqual([]);
    expect(existsSync(path.join(repo.markers, "preflight.log"))).toBe(false);
  }

  test("a project eval-dir function that throws exits 2 naming it, before the agent preflight or any shard", () => {
    refused(
      { FIXTURE_EVAL_STORE_FAIL: "1" },
      "preset shard-dir: test/helpers/eval-store.ts getProjectEvalDir() (the base of GSTACK_EVAL_DIR) failed: ",
    );
    expect(repo.agentPings()).toBe(0);
  });

  test("EVALS_TIER=gat exits 2 and starts no child", () => {
    refused({ EVALS_TIER: "gat" }, 'invalid EVALS_TIER "gat": expected one of gate, periodic');
  });

  test("--tier with an unknown tier exits 2", () => {
    refused({}, 'invalid --tier "nightly"', ["--tier", "nightly"]);
  });

  test("bad numbers exit 2: EVALS_JOBS=0, EVALS_SHARD_TIMEOUT_MS=abc, EVALS_CONCURRENCY=-1", () => {
    refused({ EVALS_JOBS: "0" }, 'invalid EVALS_JOBS "0"');
    refused(
      { EVALS_SHARD_TIMEOUT_MS: "abc" },
      'invalid EVALS_SHARD_TIMEOUT_MS "abc": expected a whole number of milliseconds',
    );
    refused({ EVALS_CONCURRENCY: "-1" }, 'invalid EVALS_CONCURRENCY "-1"');
  });

  test("--parallel with a preset exits 2: shardguard runs its own pool", () => {
    refused({}, "bun test --parallel cannot run preset gstack-paid", ["--parallel"]);
  });

  test("flags shardguard cannot pass on exit 2", () => {
    refused({}, "--coverage cannot be used with a preset", ["--coverage"]);
  });

  test("a git failure exits 2 (EVALS_BASE names no ref)", () => {
    refused({ EVALS_BASE: "no-such-ref" }, "diff-based selection fails closed");
  });
});

describe("gstack-paid with a preflight command", () => {
  let before = "";
  beforeAll(() => {
    before = repo.git("rev-parse", "HEAD").trim();
    appendFileSync(
      path.join(repo.dir, "bunfig.toml"),
      `\n[shardguard.presets.gstack-paid.preflight]\ncommand = [${JSON.stringify(BUN)}, ` +
        `"scripts/preflight.ts"]\ntimeout = 30\n`,
    );
    repo.commitAll("preflight");
  });
  afterAll(() => {
    repo.git("reset", "-q", "--hard", before);
  });

  test("a failing preflight exits 2 before any shard starts", () => {
    repo.clean();
    const r = repo.run([BUN, "test", "--preset", "gstack-paid"], { FIXTURE_PREFLIGHT_FAIL: "1" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('shardguard: preflight "');
    expect(r.stderr).toContain("exited 3; no shard started");
    expect(r.stdout).toContain("fixture preflight: the API did not answer");
    expect(readFileSync(path.join(repo.markers, "preflight.log"), "utf8")).toBe("ran\n");
    expect(repo.ranTests()).toEqual([]);
    expect(existsSync(path.join(out(), "report.json"))).toBe(false);
  });

  test("a passing preflight runs once in the parent and children get EVALS_PREFLIGHT_OK=1", () => {
    repo.clean();
    const r = repo.run([BUN, "test", "--preset", "gstack-paid"]);
    expect(r.code).toBe(0);
    expect(readFileSync(path.join(repo.markers, "preflight.log"), "utf8")).toBe("ran\n");
    const ran = repo.ranTests();
    expect(ran).toHaveLength(3);
    for (const t of ran) expect(t.EVALS_PREFLIGHT_OK).toBe("1");
    // The configured command replaced the module check, and no shard pinged the agent itself.
    expect(repo.agentPings()).toBe(0);
  });
});

describe("gstack-paid diff-based selection", () => {
  beforeAll(() => {
    repo.git("checkout", "-q", "-b", "feature");
    writeFileSync(path.join(repo.dir, "src", "alpha.ts"), `export const alpha = "alpha v2";\n`);
    repo.commitAll("change alpha's dependency");
  });
  afterAll(() => {
    repo.git("checkout", "-q", "main");
    repo.git("branch", "-q", "-D", "feature");
  });

  test(
    "a change touching one test's dependencies: the other " + "e2e shards are skipped by diff, the exit code is 0",
    () => {
      repo.clean();
      const r = repo.run([BUN, "test", "--preset", "gstack-paid"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        "selection: 1 of 3 tests selected (diff vs main: 1 changed file (src/alpha.ts)); running 2 of 3 shards",
      );
      const rep = report();
      expect(rep.exitCode).toBe(0);
      expect(rep.summary.shards).toMatchObject({ total: 3, passed: 2, "skipped-by-diff": 1, "never-started": 0 });
      const beta = rep.shards.find((s) => s.files[0] === "test/skill-e2e-beta.test.ts")!;
      expect(beta.status).toBe("skipped-by-diff");
      expect(beta.reason).toContain("none of its 1 mapped test (beta-flow) selected");
      expect(junit()).toContain(`<skipped type="skipped-by-diff" message="${beta.reason}"/>`);
      // llm-eval is outside the skill-e2e naming: always kept (fail open).
      expect(
        repo
          .ranTests()
          .map((t) => t.name)
          .sort(),
      ).toEqual(["alpha-basic", "llm-judge"]);
      for (const t of repo.ranTests()) {
        expect(JSON.parse(t.EVALS_SELECTION_JSON!)).toEqual({
          version: 1,
          selected: ["alpha-basic"],
          reason: "diff vs main: 1 changed file (src/alpha.ts)",
        });
      }
    },
  );

  test("`list` shows which shard would be skipped and why", () => {
    const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "shard 2/3 [test-skill-e2e-beta]  [would skip: not selected by the diff (diff vs main: 1 changed file " +
        "(src/alpha.ts)): none of its 1 mapped test (beta-flow) selected]",
    );
    expect(r.stdout).toContain("test/skill-e2e-alpha.test.ts  (declares tier gate; selected: alpha-basic)");
    expect(r.stdout).toContain(
      "test/skill-llm-eval.test.ts  (no whole-file tier guard: its tests decide at run time; outside the " +
        "skippable naming pattern: always runs)",
    );
  });

  test("uncommitted changes select tests too; EVALS_ALL runs everything", () => {
    writeFileSync(path.join(repo.dir, "src", "beta.ts"), `export const beta = "beta v2";\n`);
    try {
      const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
      expect(r.stdout).toContain(
        "selection: 2 of 3 tests selected (diff vs main: 2 changed files (src/alpha.ts, src/beta.ts))",
      );
      expect(r.stdout).not.toContain("would skip");
    } finally {
      repo.git("checkout", "-q", "--", "src/beta.ts");
    }
    const all = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"], { EVALS_ALL: "1" });
    expect(all.stdout).toContain("selection: all tests selected (run all (EVALS_ALL is set)); running 3 of 3 shards");
  });

  test(
    "`bun test --preset` from a subdirectory (no bunfig, " + "no preload) fails instead of passing on the entry test",
    () => {
      repo.clean();
      const r = repo.run([BUN, "test", "--preset", "gstack-paid"], {}, path.join(repo.dir, "test"));
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain("ran without shardguard's preload, so no paid test ran");
      expect(repo.ranTests()).toEqual([]);
    },
  );

  test("a preset run with nothing left to run exits 2 (it must not look like a pass)", () => {
    repo.clean();
    const r = repo.run([BUN, CLI, "run", "--preset", "gstack-paid", "test/skill-e2e-gamma.test.ts"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("nothing to run in tier gate: every file of preset gstack-paid is excluded");
    expect(existsSync(path.join(out(), "report.json"))).toBe(false);
  });

  test("a repository without a touchfiles module runs everything instead of failing (fail open)", () => {
    const module = path.join(repo.dir, "test", "helpers", "touchfiles.ts");
    const saved = readFileSync(module, "utf8");
    rmSync(module);
    try {
      const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        "selection: all tests selected (run all (no touchfiles module test/helpers/touchfiles.ts: diff-based " +
          "selection is off)); running 3 of 3 shards",
      );
    } finally {
      writeFileSync(module, saved);
    }
  });
});

describe("an intercepted run is cancellable", () => {
  test("SIGINT to `bun test --preset NAME` cancels the shards and exits 130 with the reports written", async () => {
    const dir = tempDir("sg-preset-cancel-");
    try {
      mkdirSync(path.join(dir, "e2e"));
      mkdirSync(path.join(dir, "test"));
      writeFileSync(
        path.join(dir, "bunfig.toml"),
        `[test]\npreload = ` +
          `[${JSON.stringify(path.join(REPO, "preset", "preload.ts"))}]\n\n[shardguard.presets.slow]\nglobs ` +
          `= ["e2e/*.test.ts"]\ntimeout = 60\ngrace = 1\n`,
      );
      for (const n of ["a", "b"]) {
        writeFileSync(
          path.join(dir, "e2e", `${n}.test.ts`),
          `import { test } from "bun:test";\ntest("sleeps", async () => { await Bun.sleep(30_000); }, 60_000);\n`,
        );
      }
      writeFileSync(
        path.join(dir, "test", "shardguard.slow.test.ts"),
        `import { test } from "bun:test";\ntest("entry", () => {});\n`,
      );
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("SHARDGUARD_")) env[k] = v;
      const child = spawn(BUN, ["test", "--preset", "slow"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      const t0 = performance.now();
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      await new Promise<void>((resolve) => {
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          if ((stdout.match(/ START /g) ?? []).length === 2) resolve();
        });
        void exited.then(() => resolve());
      });
      child.kill("SIGINT");
      const code = await exited;
      expect(code).toBe(130);
      expect(performance.now() - t0).toBeLessThan(15_000);
      expect(stdout).toContain("shardguard: SIGINT received");
      const rep = RunReportSchema.parse(JSON.parse(readFileSync(path.join(dir, ".shardguard", "report.json"), "utf8")));
      expect(rep.cancelledBy).toBe("SIGINT");
      expect(rep.exitCode).toBe(130);
      expect(rep.shards.some((s) => s.status === "passed")).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
