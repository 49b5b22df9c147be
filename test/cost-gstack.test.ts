/**
 * gstack-paid's cost adapter (docs/cost.md, "Adapters") on the gstack-shaped fixture repository: its tests
 * write eval results in gstack's format (test/fixtures/gstack-repo, EvalCollector) and real shards run them;
 * per-test, per-shard and run cost must be what those result files say, a wedged shard's partial file included.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { RunReportSchema, type RunReport } from "../runner/results/report-model.ts";
import { BUN, buildGstackRepo, CLI, type GstackRepo } from "./helpers/gstack-repo.ts";

let repo: GstackRepo;
const out = () => path.join(repo.dir, ".shardguard");
const report = (): RunReport =>
  RunReportSchema.parse(JSON.parse(readFileSync(path.join(out(), "report.json"), "utf8")));

beforeAll(() => {
  repo = buildGstackRepo();
});
afterAll(() => repo?.remove());

/**
 * Dollars of every result file gstack's collector wrote in the shard directories (under the project's eval
 * directory, the fixture's getProjectEvalDir), by shard directory.
 */
function writtenTotals(): Map<string, { file: string; usd: number; names: string[] }> {
  const shards = path.join(repo.dir, ".evals-home", "projects", "fixture", "evals", "shards");
  const totals = new Map<string, { file: string; usd: number; names: string[] }>();
  for (const dir of readdirSync(shards)) {
    const files = readdirSync(path.join(shards, dir)).filter((f) => f.endsWith(".json"));
    // The final file when the collector finalized, else its partial one (the shard was killed).
    const file = files.find((f) => !f.startsWith("_partial")) ?? files.find((f) => f.startsWith("_partial"));
    if (!file) continue;
    const data = JSON.parse(readFileSync(path.join(shards, dir, file), "utf8")) as {
      tests: { name: string; cost_usd: number }[];
    };
    const usd = data.tests.reduce((sum, t) => sum + t.cost_usd, 0);
    totals.set(dir, { file, usd, names: data.tests.map((t) => t.name) });
  }
  return totals;
}

describe("gstack-paid reads gstack's eval results as the cost source", () => {
  test("per-test, per-shard and run cost equal the result files, the wedged shard's partial file included", () => {
    repo.clean();
    rmSync(path.join(repo.dir, ".evals-home"), { recursive: true, force: true });
    const costs = { "alpha-basic": 0.25, "beta-flow": 1.5, "llm-judge": 0.125 };
    const r = repo.run([BUN, CLI, "run", "--preset", "gstack-paid"], {
      FIXTURE_EVAL_COSTS: JSON.stringify(costs),
      FIXTURE_WEDGE: "beta-flow",
      EVALS_SHARD_TIMEOUT_MS: "4000",
      EVALS_PREFLIGHT_OK: "1",
    });
    expect(r.code).toBe(1);
    const rep = report();
    const written = writtenTotals();
    // beta was killed before its collector finalized: only its partial file is there.
    expect(written.get("skill-e2e-beta")?.file).toBe("_partial-e2e.json");
    expect(written.get("skill-e2e-alpha")?.file).toMatch(/^0\.0\.1-main-e2e-.*\.json$/);
    const byFile = new Map(rep.shards.map((s) => [path.basename(s.files[0]!).replace(/\.test\.ts$/, ""), s]));
    for (const [dir, w] of written) {
      const shard = byFile.get(dir)!;
      expect(shard.cost?.usd).toBe(w.usd);
      expect(shard.cost?.adapter).toBe("gstack-eval");
      expect(shard.cost?.unattributedUsd).toBe(0);
    }
    const beta = byFile.get("skill-e2e-beta")!;
    expect(beta.status).toBe("timed-out");
    const wedged = beta.tests.find((t) => t.name === "skill-e2e-beta > beta-flow")!;
    expect(wedged.status).toBe("timed-out");
    expect(wedged.cost).toEqual({ usd: 1.5, tokens: 15_000, model: "fixture-model", source: "gstack-eval" });
    const alpha = byFile.get("skill-e2e-alpha")!.tests.find((t) => t.name === "skill-e2e-alpha > alpha-basic")!;
    expect(alpha.cost?.usd).toBe(0.25);
    const total = [...written.values()].reduce((sum, w) => sum + w.usd, 0);
    expect(total).toBe(1.875);
    expect(rep.summary.cost).toEqual({ usd: 1.875, usdInUnfinished: 1.5 });
    expect(r.stdout).toContain("shardguard: spent $1.875; $1.50 in shards that did not finish");
  }, 90_000);

  test("an entry gstack names its own way is charged to the test in flight when it was written", () => {
    repo.clean();
    rmSync(path.join(repo.dir, ".evals-home"), { recursive: true, force: true });
    const r = repo.run([BUN, CLI, "run", "--preset", "gstack-paid", "test/skill-e2e-alpha.test.ts"], {
      FIXTURE_EVAL_COSTS: JSON.stringify({ "alpha-basic": 0.75 }),
      FIXTURE_EVAL_RENAME: "1",
      EVALS_PREFLIGHT_OK: "1",
    });
    expect(r.code).toBe(0);
    const shard = report().shards[0]!;
    expect(writtenTotals().get("skill-e2e-alpha")?.names).toEqual(["/alpha-basic"]);
    expect(shard.cost?.usd).toBe(0.75);
    // With events the entry is the ending test's; a shard that lost its events keeps it unattributed.
    const test = shard.tests.find((t) => t.name === "skill-e2e-alpha > alpha-basic")!;
    if (shard.testSource.includes("events")) expect(test.cost?.usd).toBe(0.75);
    else expect(shard.cost?.unattributedUsd).toBe(0.75);
  }, 60_000);
});

describe("gstack-paid's hard caps are its budget", () => {
  const costs = JSON.stringify({ "alpha-basic": 0.25, "beta-flow": 1.5, "llm-judge": 0.125 });

  test("EVALS_BUDGET_HARD_CAP_GATE stops the gate tier: after one shard no further one starts", () => {
    repo.clean();
    const r = repo.run([BUN, CLI, "run", "--preset", "gstack-paid"], {
      FIXTURE_EVAL_COSTS: costs,
      EVALS_PREFLIGHT_OK: "1",
      EVALS_JOBS: "1",
      EVALS_BUDGET_HARD_CAP_GATE: "0.1",
      // Another tier's cap, and the umbrella, lose to the tier's own.
      EVALS_BUDGET_HARD_CAP_PERIODIC: "50",
      EVALS_BUDGET_HARD_CAP: "60",
    });
    expect(r.code).toBe(1);
    const rep = report();
    expect(rep.summary.cost?.budgetUsd).toBe(0.1);
    const unstarted = rep.shards.filter((s) => s.status === "never-started");
    expect(unstarted).toHaveLength(2);
    for (const s of unstarted) expect(s.reason).toMatch(/^budget of \$0\.10 reached \(\$0\.\d+ spent\)$/);
  }, 60_000);

  test("the umbrella EVALS_BUDGET_HARD_CAP applies without the tier's; an explicit --budget-usd wins", () => {
    repo.clean();
    const env = { FIXTURE_EVAL_COSTS: costs, EVALS_PREFLIGHT_OK: "1", EVALS_JOBS: "1", EVALS_BUDGET_HARD_CAP: "70" };
    const run = repo.run([BUN, CLI, "run", "--preset", "gstack-paid", "--budget-usd", "0.1"], env);
    expect(run.code).toBe(1);
    expect(report().summary.cost?.budgetUsd).toBe(0.1);
    expect(report().shards.filter((s) => s.status === "never-started")).toHaveLength(2);
    repo.clean();
    const umbrella = repo.run([BUN, CLI, "run", "--preset", "gstack-paid"], env);
    expect(umbrella.code).toBe(0);
    expect(report().summary.cost?.budgetUsd).toBe(70);
    expect(report().shards.filter((s) => s.status === "never-started")).toHaveLength(0);
  }, 90_000);

  test("a bad cap is one line naming the variable, exit 2, and nothing starts", () => {
    repo.clean();
    const r = repo.run([BUN, CLI, "run", "--preset", "gstack-paid"], {
      FIXTURE_EVAL_COSTS: costs,
      EVALS_PREFLIGHT_OK: "1",
      EVALS_BUDGET_HARD_CAP_GATE: "lots",
    });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("EVALS_BUDGET_HARD_CAP_GATE");
    expect(lines[0]).toContain("a number of dollars above 0");
    expect(repo.ranTests()).toEqual([]);
  }, 30_000);
});
