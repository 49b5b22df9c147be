/**
 * gstack-paid as a true drop-in: after `shardguard init`, every command line
 * of the gstack-shaped fixture repository keeps its meaning (docs/presets.md).
 * Tierless lines stay tierless and give plain `bun test`'s exit code; the
 * project's own sharded runner is never taken over; an edit to the
 * touchfiles data module never selects less than the map diff; one agent
 * preflight per run; the selection line names the files that mattered.
 *
 * "Plain" runs use SHARDGUARD_INTERCEPT=0: the same repository, the same
 * preload, no take-over, i.e. what the line did before init.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { RunReportSchema, type RunReport } from "../runner/results/report-model.ts";
import { BUN, buildGstackRepo, CLI, type GstackRepo } from "./helpers/gstack-repo.ts";

let repo: GstackRepo;
const out = () => path.join(repo.dir, ".shardguard");
const report = (): RunReport =>
  RunReportSchema.parse(JSON.parse(readFileSync(path.join(out(), "report.json"), "utf8")));
const shardguardLines = (text: string) => text.split("\n").filter((l) => l.startsWith("shardguard: "));
const PLAIN = { SHARDGUARD_INTERCEPT: "0" };

beforeAll(() => {
  repo = buildGstackRepo();
});
afterAll(() => repo?.remove());

describe("command lines that name no tier keep their tierless meaning", () => {
  test(
    "a failing tierless line fails under shardguard as under plain bun test: no tier, nothing left out, " +
      "EVALS_TIER not set",
    () => {
      const line = [BUN, "test", "test/skill-e2e-gamma.test.ts"];
      const env = { EVALS: "1", EVALS_ALL: "1", FIXTURE_FAIL: "gamma-nightly" };
      repo.clean();
      const plain = repo.run(line, { ...env, ...PLAIN });
      expect(plain.code).toBe(1);
      expect(repo.ranTests().map((t) => t.name)).toEqual(["gamma-nightly"]);

      repo.clean();
      const r = repo.run(line, env);
      expect(r.code).toBe(plain.code);
      expect(r.stdout).toContain("no tier (none named: EVALS_TIER not set for shards, no file left out by tier)");
      const rep = report();
      expect(rep.preset).toMatchObject({ tier: null });
      expect(rep.shards.map((s) => [s.files[0], s.status])).toEqual([["test/skill-e2e-gamma.test.ts", "failed"]]);
      // The line had no --retry, so the failing test ran once, as under plain bun test; no flag of the preset's was
      // added.
      const ran = repo.ranTests();
      expect(ran.map((t) => t.name)).toEqual(["gamma-nightly"]);
      for (const t of ran) expect(t).toMatchObject({ SHARDGUARD_SHARD: "1", EVALS_TIER: null });
      expect(r.stdout).toContain("shardguard: shard flags: (none)");
      expect(r.stdout).toContain("no max-concurrency (the bun test line sets none)");
    },
  );

  test(
    "a paid file named without EVALS=1 runs as plain bun test runs it: its tests skip, no agent ping, nothing " +
      "taken over",
    () => {
      const line = [BUN, "test", "test/skill-e2e-alpha.test.ts"];
      repo.clean();
      const plain = repo.run(line, PLAIN);
      repo.clean();
      const r = repo.run(line);
      expect(r.code).toBe(plain.code);
      expect(r.code).toBe(0);
      expect(shardguardLines(r.stdout + r.stderr)).toEqual([]);
      expect(repo.ranTests()).toEqual([]);
      expect(repo.agentPings()).toBe(0);
      expect(existsSync(path.join(out(), "report.json"))).toBe(false);
    },
  );

  test(
    "`bun run test:evals` plans every paid file, the " + "periodic-only ones included, and agrees with plain bun test",
    () => {
      repo.clean();
      const plain = repo.run([BUN, "run", "test:evals"], PLAIN);
      const plainRan = repo
        .ranTests()
        .map((t) => t.name)
        .sort();
      repo.clean();
      const r = repo.run([BUN, "run", "test:evals"]);
      expect(r.code).toBe(plain.code);
      expect(r.code).toBe(0);
      expect(report().shards.map((s) => s.files[0])).toEqual([
        "test/codex-e2e.test.ts",
        "test/skill-e2e-alpha.test.ts",
        "test/skill-e2e-beta.test.ts",
        "test/skill-e2e-gamma.test.ts",
        "test/skill-llm-eval.test.ts",
      ]);
      expect(
        repo
          .ranTests()
          .map((t) => t.name)
          .sort(),
      ).toEqual(plainRan);
      expect(plainRan).toContain("gamma-nightly");
    },
  );

  test(
    "`bun run test:codex` runs its file as before init " + "(its tests skip themselves outside the periodic tier)",
    () => {
      repo.clean();
      const plain = repo.run([BUN, "run", "test:codex"], PLAIN);
      repo.clean();
      const r = repo.run([BUN, "run", "test:codex"]);
      expect(r.code).toBe(plain.code);
      expect(r.code).toBe(0);
      const rep = report();
      expect(rep.shards.map((s) => [s.files[0], s.status])).toEqual([["test/codex-e2e.test.ts", "passed"]]);
      expect(rep.summary.tests).toMatchObject({ skipped: 1 });
    },
  );

  test(
    "naming the tier still narrows: EVALS_TIER=gate with only periodic files has nothing to run (exit 2, " +
      "nothing spent)",
    () => {
      repo.clean();
      const r = repo.run([BUN, "test", "test/codex-e2e.test.ts"], { EVALS: "1", EVALS_TIER: "gate" });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("nothing to run in tier gate");
      expect(repo.agentPings()).toBe(0);
    },
  );
});

describe("another sharded runner's bun test children are never taken over", () => {
  test("`bun run test:gate:sharded` behaves exactly as without shardguard", () => {
    repo.clean();
    const plain = repo.run([BUN, "run", "test:gate:sharded"], PLAIN);
    const plainRan = repo.ranTests();
    repo.clean();
    const r = repo.run([BUN, "run", "test:gate:sharded"]);
    expect(r.code).toBe(0);
    expect(r.code).toBe(plain.code);
    expect(r.stdout).toBe(plain.stdout);
    expect(r.stdout).toContain("[fixture-shards] 4/4 shards passed");
    expect(shardguardLines(r.stdout + r.stderr)).toEqual([]);
    expect(existsSync(out())).toBe(false);
    const ran = repo.ranTests();
    expect(ran.map((t) => t.name).sort()).toEqual(plainRan.map((t) => t.name).sort());
    for (const t of ran)
      expect(t).toMatchObject({ SHARDGUARD_SHARD: null, EVALS_PREFLIGHT_OK: "1", EVALS_TIER: "gate" });
    expect(new Set(ran.map((t) => t.pid)).size).toBe(ran.length);
    expect(repo.agentPings()).toBe(1); // the fixture runner's own, once
  });
});

describe("one agent preflight per run", () => {
  test("a failing agent check stops the run before any shard (exit 2); nothing pings twice", () => {
    repo.clean();
    const r = repo.run([BUN, "test", "--preset", "gstack-paid"], { FIXTURE_AGENT_EXIT: "1" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'shardguard: preflight "test/helpers/anthropic-preflight.ts ' +
        'preflightAnthropicApi(env)" exited 1; no shard started',
    );
    expect(r.stdout).toContain("agent preflight failed: exit 1");
    expect(repo.agentPings()).toBe(1);
    expect(repo.ranTests()).toEqual([]);
  });

  test("a module without the named function export fails the preflight with that reason (exit 2)", () => {
    const bunfig = path.join(repo.dir, "bunfig.toml");
    const saved = readFileSync(bunfig, "utf8");
    writeFileSync(bunfig, `${saved}\n[shardguard.presets.gstack-paid.preflight]\nexport = "noSuchCheck"\n`);
    try {
      repo.clean();
      const r = repo.run([BUN, "test", "--preset", "gstack-paid"]);
      expect(r.code).toBe(2);
      expect(r.stdout).toContain("test/helpers/anthropic-preflight.ts has no function export noSuchCheck");
      expect(r.stderr).toContain("exited 2; no shard started");
      expect(repo.ranTests()).toEqual([]);
    } finally {
      writeFileSync(bunfig, saved);
    }
  });

  test("without the module there is no preflight and the header says so", () => {
    const module = path.join(repo.dir, "test", "helpers", "anthropic-preflight.ts");
    const saved = readFileSync(module, "utf8");
    rmSync(module);
    try {
      const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        "shardguard: preflight: none (no test/helpers/anthropic-preflight.ts in this repository): each shard does " +
          "its own check, if any",
      );
    } finally {
      writeFileSync(module, saved);
    }
  });
});

describe("--tier and Bun's path filter", () => {
  test("`--tier gate` gets a note (Bun read gate as a filter); `--tier=gate` needs none", () => {
    repo.clean();
    const split = repo.run([BUN, "test", "--preset", "gstack-paid", "--tier", "gate"]);
    expect(split.code).toBe(0);
    expect(split.stdout).toContain('shardguard: note: Bun read "gate" after --tier as a test path filter');
    repo.clean();
    const joined = repo.run([BUN, "test", "--preset", "gstack-paid", "--tier=gate"]);
    expect(joined.code).toBe(0);
    expect(joined.stdout).not.toContain("shardguard: note:");
    expect(joined.stdout).toContain("tier gate (from --tier)");
    // Bun's only file header names the entry file, which runs no test.
    expect(joined.stdout + joined.stderr).toContain("test/shardguard.gstack-paid.test.ts:");
  });

  test("`--tier=gate --tier=periodic` is refused with exit 2 before any shard: never the last one taken", () => {
    repo.clean();
    const r = repo.run([BUN, "test", "--preset", "gstack-paid", "--tier=gate", "--tier=periodic"]);
    expect(r.code).toBe(2);
    expect(shardguardLines(r.stderr)).toEqual(["shardguard: bun test: flag --tier was given twice; give it once"]);
    expect(existsSync(path.join(out(), "report.json"))).toBe(false);
  });
});

describe("an edit to the touchfiles data module never selects less than the map diff", () => {
  const data = () => path.join(repo.dir, "test", "helpers", "touchfiles-data.ts");
  beforeAll(() => repo.git("checkout", "-q", "-b", "data-edit"));
  afterAll(() => {
    repo.git("checkout", "-q", "-f", "main");
    repo.git("branch", "-q", "-D", "data-edit");
  });

  test("a glob added to one entry selects that test and runs its shard; the others are skipped by diff", () => {
    const text = readFileSync(data(), "utf8");
    writeFileSync(
      data(),
      text.replace(`"beta-flow": ["src/beta.ts"]`, `"beta-flow": ["src/beta.ts", "src/beta-extra.ts"]`),
    );
    repo.commitAll("beta depends on one more file");
    repo.clean();
    const r = repo.run([BUN, "test", "--preset", "gstack-paid"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "selection: 1 of 3 tests selected (diff vs main: 1 changed file (test/helpers/touchfiles-data.ts); map diff " +
        "of test/helpers/touchfiles-data.ts: 1 entry changed (beta-flow)); running 2 of 3 shards",
    );
    expect(
      repo
        .ranTests()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["beta-flow", "llm-judge"]);
    expect(report().shards.find((s) => s.files[0] === "test/skill-e2e-alpha.test.ts")?.status).toBe("skipped-by-diff");
  });

  test("a tier flip in the data selects that test", () => {
    const text = readFileSync(data(), "utf8");
    writeFileSync(data(), text.replace(`"alpha-basic": "gate"`, `"alpha-basic": "periodic"`));
    const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "map diff of test/helpers/touchfiles-data.ts: 2 entries changed (alpha-basic, beta-flow)); running 3 of 3 shards",
    );
    repo.git("checkout", "-q", "--", "test/helpers/touchfiles-data.ts");
  });

  test("a change to the global touchfiles in the data runs everything", () => {
    const text = readFileSync(data(), "utf8");
    writeFileSync(
      data(),
      text.replace(`["test/helpers/e2e.ts", "package.json"]`, `["test/helpers/e2e.ts", "package.json", "bun.lock"]`),
    );
    const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
    expect(r.stdout).toContain(
      "selection: 3 of 3 tests selected (run all (the touchfiles source test/helpers/touchfiles-data.ts changed: " +
        "its global touchfiles differ from main))",
    );
    repo.git("checkout", "-q", "--", "test/helpers/touchfiles-data.ts");
  });
});

describe("the selection line names the changed files that mattered", () => {
  beforeAll(() => {
    repo.git("checkout", "-q", "-b", "many-files");
    writeFileSync(path.join(repo.dir, "src", "alpha.ts"), `export const alpha = "alpha v2";\n`);
    for (const f of ["a-notes.md", "b-notes.md", "bunfig-notes.md"]) writeFileSync(path.join(repo.dir, f), "x\n");
    repo.commitAll("alpha and notes");
  });
  afterAll(() => {
    repo.git("checkout", "-q", "-f", "main");
    repo.git("branch", "-q", "-D", "many-files");
  });

  test("the file that selected something comes first in the cut list; `list` names them all", () => {
    const r = repo.run([BUN, CLI, "list", "--preset", "gstack-paid"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "selection: 1 of 3 tests selected (diff vs main: 4 changed files (src/alpha.ts, a-notes.md, b-notes.md, …)); running 2 of 3 shards",
    );
    expect(r.stdout).toContain(
      "shardguard: changed files (4, those that selected something first): src/alpha.ts, a-notes.md, b-notes.md, " +
        "bunfig-notes.md",
    );
  });
});
