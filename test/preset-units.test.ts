/**
 * Presets piece by piece: schema and extension, tiers, flags, interception
 * decisions, diff decisions, settings precedence. Files are written into
 * temp dirs (touchfiles loading and the map diff: preset-touchfiles.test.ts).
 */
import { shardDirName } from "../runner/presets/shard-dir.ts";
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { parseArgs } from "../runner/config/args.ts";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { main } from "../runner/cli/main.ts";
import type { Host } from "../runner/engine/host.ts";
import type { PlannedShard } from "../runner/plan/plan.ts";
import {
  decideFile,
  matchesGlob,
  partitionShards,
  quotedNames,
  serializeSelection,
  type Touchfiles,
} from "../runner/presets/diff.ts";
import { expandFlagTemplates, mergeShardFlags, splitBunTestArgs } from "../runner/presets/flags.ts";
import { decideInterception, parseBunTestCommand, readCommandLine } from "../runner/presets/intercept-decision.ts";
import { getPreset, loadPresets, mergeTables } from "../runner/presets/resolve.ts";
import type { SelectionSpec, TierSpec } from "../runner/presets/preset-schema.ts";
import { chooseTier, classifyTier, filterByTier } from "../runner/presets/select-tier.ts";
import { checkShardFlags, preparePresetRun } from "../runner/presets/session.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";
import { configErrorAsync } from "./helpers/config-error.ts";
import { sampleTouchfiles } from "./helpers/touchfiles-fixture.ts";

afterAll(removeSuites);

/** A temp dir holding `files` (relative path → text), removed after the file's tests. */
const tree = (files: Record<string, string>): string => makeSuite(files, "sg-preset-");

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).not.toContain("\n");
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const GSTACK_TIER: TierSpec = loadPresets(tree({})).presets.get("gstack-paid")!.tier!;

describe("preset schema and extension", () => {
  test("the built-in gstack-paid preset has the reference values", () => {
    const p = getPreset(loadPresets(tree({})), "gstack-paid");
    expect(p).toMatchObject({
      source: "built-in",
      jobs: 4,
      maxConcurrency: 4,
      timeoutMs: 1_800_000,
      filesPerShard: 1,
      env: { EVALS: "1" },
      knobs: { jobs: "EVALS_JOBS", maxConcurrency: "EVALS_CONCURRENCY", timeoutMs: "EVALS_SHARD_TIMEOUT_MS" },
      shardDir: {
        env: "GSTACK_EVAL_DIR",
        module: { path: "test/helpers/eval-store.ts", export: "getProjectEvalDir" },
        slug: "file-stem",
      },
      script: "test:gate",
      // A paid file that registers nothing is a fault there (a guard or a typo turned it off).
      emptyFiles: "fail",
    });
    expect(p.globs).toContain("test/skill-e2e-*.test.ts");
    expect(p.tier).toMatchObject({ env: "EVALS_TIER", values: ["gate", "periodic"], default: "gate" });
    expect(p.selection).toMatchObject({
      touchfiles: "test/helpers/touchfiles.ts",
      namesExports: ["E2E_TIERS"],
      selectionEnv: "EVALS_SELECTION_JSON",
    });
    expect(p.preflight).toEqual({
      command: null,
      module: { path: "test/helpers/anthropic-preflight.ts", export: "preflightAnthropicApi" },
      timeoutMs: 120_000,
      okEnv: "EVALS_PREFLIGHT_OK",
    });
  });

  test("a table named like a built-in extends it; nested tables merge, arrays replace", () => {
    const dir = tree({
      "bunfig.toml":
        `[shardguard.presets.gstack-paid]\njobs = 2\nglobs = ` +
        `["test/paid/*.test.ts"]\n\n[shardguard.presets.gstack-paid.tier]\ndefault = "periodic"\n`,
    });
    const p = getPreset(loadPresets(dir), "gstack-paid");
    expect(p.jobs).toBe(2);
    expect(p.globs).toEqual(["test/paid/*.test.ts"]);
    expect(p.tier).toMatchObject({ default: "periodic", values: ["gate", "periodic"], env: "EVALS_TIER" });
    expect(p.tier!.guards).toHaveLength(2);
    expect(p.source).toBe("bunfig.toml, extends the built-in");
  });

  test("user presets extend other presets, and come before built-ins", () => {
    const dir = tree({
      "bunfig.toml":
        `[shardguard.presets.base]\nglobs = ["e2e/*.test.ts"]\njobs = ` +
        `3\n\n[shardguard.presets.child]\nextends = "base"\nmax-concurrency = 2\n`,
    });
    const catalog = loadPresets(dir);
    expect([...catalog.presets.keys()]).toEqual(["base", "child", "gstack-paid"]);
    expect(getPreset(catalog, "child")).toMatchObject({
      globs: ["e2e/*.test.ts"],
      jobs: 3,
      maxConcurrency: 2,
      tier: null,
      selection: null,
      source: "bunfig.toml, extends base",
    });
  });

  test("mistakes are one line naming the table, key, value and what is accepted", () => {
    const err = (toml: string) => configError(() => loadPresets(tree({ "bunfig.toml": toml })));
    expect(err(`[shardguard.presets.x]\nglobs = ["a"]\njbos = 2\n`)).toMatch(
      /^unknown key bunfig\.toml \[shardguard\.presets\.x\] jbos; accepted keys: .*jobs/,
    );
    expect(err(`[shardguard.presets.x]\nglobs = ["a"]\njobs = 0\n`)).toMatch(
      /^invalid bunfig\.toml \[shardguard\.presets\.x\] jobs 0: /,
    );
    expect(err(`[shardguard.presets.x]\njobs = 2\n`)).toBe(
      "invalid bunfig.toml [shardguard.presets.x] globs (missing): expected an array of globs, at least one (e.g. " +
        '["test/e2e/**/*.test.ts"])',
    );
    // The run's numbers read as [shardguard]'s do: "10" is 10 s; zod's own words never show.
    expect(
      getPreset(loadPresets(tree({ "bunfig.toml": `[shardguard.presets.x]\nglobs = ["a"]\ntimeout = "10"\n` })), "x")
        .timeoutMs,
    ).toBe(10_000);
    expect(err(`[shardguard.presets.x]\nglobs = ["a"]\ngrace = "soon"\n`)).toBe(
      'invalid bunfig.toml [shardguard.presets.x] grace "soon": expected a number of seconds from 0 to 2147483',
    );
    expect(err(`[shardguard.presets.x]\nglobs = ["a"]\nshard-dir = { env = "X", base = "b", slug = "nope" }\n`)).toBe(
      'invalid bunfig.toml [shardguard.presets.x] shard-dir.slug "nope": expected plan or file-stem',
    );
    expect(err(`[shardguard.presets.x]\nextends = "nope"\n`)).toContain(
      'extends "nope": no such preset; accepted: x, gstack-paid',
    );
    expect(err(`[shardguard.presets.a]\nextends = "b"\n[shardguard.presets.b]\nextends = "a"\n`)).toContain(
      "cycle a -> b -> a",
    );
    expect(err(`[shardguard.presets.gstack-paid.tier]\ndefault = "nightly"\n`)).toContain("tier.default");
    expect(err(`[shardguard.presets.gstack-paid.tier]\nguards = ["(unclosed {tier}"]\n`)).toContain(
      "not a valid regular expression",
    );
    expect(err(`[shardguard.presets.gstack-paid.tier]\nguards = ["no placeholder"]\n`)).toContain(
      "must contain {tier}",
    );
    expect(err(`[shardguard.presets.gstack-paid.env]\n"1BAD" = "x"\n`)).toContain("env.1BAD");
    expect(err(`[shardguard]\npresets = 3\n`)).toContain("expected a table of [shardguard.presets.NAME] tables");
    expect(err(`[shardguard.presets.x]\nglobs = ["a"]\nempty-files = "no"\n`)).toBe(
      'invalid bunfig.toml [shardguard.presets.x] empty-files "no": expected pass or fail',
    );
    expect(err(`[shardguard.presets.x]\nglobs = ["a"]\nbudget-usd = -2\n`)).toBe(
      "invalid bunfig.toml [shardguard.presets.x] budget-usd -2: expected a number of dollars above 0, such as 20 or 2.5",
    );
    expect(configError(() => getPreset(loadPresets(tree({})), "gstack-pad"))).toBe(
      'invalid --preset "gstack-pad": no such preset; accepted: gstack-paid',
    );
  });

  test("mergeTables merges nested tables and replaces everything else", () => {
    expect(mergeTables({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, d: { e: 1 } })).toEqual({
      a: { b: 1, c: [3] },
      d: { e: 1 },
    });
  });
});

describe("shard directory names", () => {
  test("file-stem: gstack's rule (stems joined by +, other characters -); plan: the shard's slug", () => {
    const shard = {
      slug: "test-skill-e2e-a",
      files: ["test/skill-e2e-a.test.ts", "test/sub/b c.spec.tsx", "test/x.test.mjs"],
    };
    expect(shardDirName({ slug: "file-stem" }, shard)).toBe("skill-e2e-a+b-c+x");
    expect(shardDirName({ slug: "file-stem" }, { slug: "s", files: ["test/gemini-e2e.test.ts"] })).toBe("gemini-e2e");
    expect(shardDirName({ slug: "plan" }, shard)).toBe("test-skill-e2e-a");
  });
});

describe("tiers", () => {
  test("a file is left out only on explicit evidence of another tier", () => {
    const cases: [string, boolean, string][] = [
      ["if (process.env.EVALS_TIER === 'periodic') {}", false, "declares tier periodic only"],
      ["describeE2ETier('periodic', () => {})", false, "declares tier periodic only"],
      ["if (e2eTierEnabled(`periodic`)) {}", false, "declares tier periodic only"],
      ['describeE2ETier( "gate" )', true, "declares tier gate"],
      ["EVALS_TIER === 'gate' || EVALS_TIER === 'periodic'", true, "declares tier gate"],
      ["const tiers = { retro: 'periodic' };", true, "no whole-file tier guard: its tests decide at run time"],
      ["", true, "no whole-file tier guard: its tests decide at run time"],
    ];
    for (const [source, included, reason] of cases)
      expect(classifyTier(source, "gate", GSTACK_TIER)).toEqual({ included, reason });
  });

  test("filterByTier keeps unreadable files", () => {
    const dir = tree({ "a.test.ts": "describeE2ETier('periodic')", "b.test.ts": "" });
    const r = filterByTier(dir, ["a.test.ts", "b.test.ts", "missing.test.ts"], "gate", GSTACK_TIER);
    expect(r.selected).toEqual(["b.test.ts", "missing.test.ts"]);
    expect(r.reasons.get("missing.test.ts")).toBe("source unreadable: kept");
    expect(r.excluded).toEqual([{ file: "a.test.ts", reason: "tier gate: declares tier periodic only" }]);
  });

  test("the tier comes from --tier, then EVALS_TIER (empty = unset), then the default; a typo is an error", () => {
    expect(chooseTier(GSTACK_TIER, "periodic", { EVALS_TIER: "gate" })).toEqual({ name: "periodic", from: "--tier" });
    expect(chooseTier(GSTACK_TIER, undefined, { EVALS_TIER: "periodic" })).toEqual({
      name: "periodic",
      from: "EVALS_TIER",
    });
    expect(chooseTier(GSTACK_TIER, undefined, { EVALS_TIER: "" })).toEqual({ name: "gate", from: "default" });
    // A line that had a tierless meaning keeps it: no tier, not the default.
    expect(chooseTier(GSTACK_TIER, undefined, { EVALS_TIER: "" }, false)).toBeNull();
    expect(chooseTier(GSTACK_TIER, undefined, { EVALS_TIER: "periodic" }, false)).toEqual({
      name: "periodic",
      from: "EVALS_TIER",
    });
    expect(configError(() => chooseTier(GSTACK_TIER, undefined, { EVALS_TIER: "e2e" }))).toContain(
      'invalid EVALS_TIER "e2e": expected one of gate, periodic',
    );
  });
});

describe("bun test flags", () => {
  test("split as Bun 1.4.4 does: listed flags take the next argument, others only after =", () => {
    const r = splitBunTestArgs(
      ["-t", "x y", "--retry", "1", "--bail", "3", "--unknown", "f.test.ts", "--preset", "p"],
      ["--preset"],
    );
    expect(r.flags.map((f) => [f.name, f.value])).toEqual([
      ["--test-name-pattern", "x y"],
      ["--retry", "1"],
      ["--bail", null],
      ["--unknown", null],
      ["--preset", "p"],
    ]);
    expect(r.positionals).toEqual(["3", "f.test.ts"]);
  });

  test(
    "merging: the command line replaces the preset's flag in place, in one --name=value token; extras are " +
      "appended",
    () => {
      const preset = expandFlagTemplates(
        ["--retry=1", "--concurrent", "--max-concurrency={max-concurrency}", "--timeout={timeout-ms}"],
        { maxConcurrency: 4, timeoutMs: 90_000 },
      );
      expect(preset).toEqual(["--retry=1", "--concurrent", "--max-concurrency=4", "--timeout=90000"]);
      const line = splitBunTestArgs(["--retry", "3", "-t", "smoke", "--no-orphans", "--bail=2"]).flags;
      expect(mergeShardFlags(preset, line)).toEqual([
        "--retry=3",
        "--concurrent",
        "--max-concurrency=4",
        "--timeout=90000",
        "--test-name-pattern=smoke",
        "--bail=2",
      ]);
    },
  );

  test("flags shardguard cannot pass on are refused with the reason", () => {
    expect(configError(() => checkShardFlags(splitBunTestArgs(["--reporter", "junit"]).flags, "bun test"))).toContain(
      "bun test: --reporter junit cannot be used with a preset: shardguard writes the JUnit and JSON reports itself",
    );
    expect(() => checkShardFlags(splitBunTestArgs(["--retry=2", "--only"]).flags, "x")).not.toThrow();
  });
});

describe("reading the bun test command line", () => {
  test("finds `test` after Bun's own flags and splits what follows", () => {
    expect(
      parseBunTestCommand([
        "/usr/bin/bun",
        "--cwd",
        "sub",
        "test",
        "--preset",
        "gstack-paid",
        "--tier=periodic",
        "-t",
        "a",
        "x.test.ts",
      ]),
    ).toEqual({
      flags: [{ name: "--test-name-pattern", value: "a", tokens: ["-t", "a"] }],
      positionals: ["x.test.ts"],
      preset: "gstack-paid",
      tier: "periodic",
      tierSplit: false,
      parallel: false,
      testWorker: false,
      repeated: null,
    });
    expect(parseBunTestCommand(["bun", "test", "--preset", "gstack-paid", "--tier", "gate"])).toMatchObject({
      tier: "gate",
      tierSplit: true,
      positionals: [],
    });
    expect(parseBunTestCommand(["bun", "test", "--preset"])?.preset).toBe("");
    expect(parseBunTestCommand(["bun", "test", "--parallel=2"])?.parallel).toBe(true);
    expect(parseBunTestCommand(["bun", "test", "--test-worker", "--isolate"])?.testWorker).toBe(true);
    expect(parseBunTestCommand(["bun", "run", "test"])).toBeNull();
    expect(parseBunTestCommand(["bun", "script.ts", "test"])).toBeNull();
  });

  test("this process's own command line is readable on Linux", () => {
    const argv = readCommandLine(process.pid);
    if (process.platform === "linux") expect(argv).toContain("test");
    expect(readCommandLine(process.pid, "win32")).toBeNull();
  });
});

describe("interception decisions", () => {
  const repo = tree({
    "test/skill-e2e-a.test.ts": "",
    "test/skill-e2e-b.test.ts": "",
    "test/unit.test.ts": "",
    "bunfig.toml": "",
  });
  const decide = (
    argv: string[] | null,
    env: Record<string, string> = {},
    parent: string[] | null = null,
    cwd = repo,
  ) => decideInterception({ argv, env, cwd, parentArgv: () => parent });
  /** What gstack's paid scripts set (`EVALS=1 bun test …`), gstack-paid's `env`. */
  const ON = { EVALS: "1" };

  test("--preset takes over; --preset with --parallel, or without a name, is refused", async () => {
    expect(await decide(["bun", "test", "--preset", "gstack-paid", "--retry", "2"])).toEqual({
      action: "take-over",
      preset: "gstack-paid",
      via: "--preset",
      files: [],
      tier: null,
      tierDefault: true,
      tierSplit: false,
      flags: [{ name: "--retry", value: "2", tokens: ["--retry", "2"] }],
    });
    expect(await decide(["bun", "test", "--parallel", "--preset=gstack-paid"])).toMatchObject({
      action: "refuse",
      message: expect.stringContaining("cannot run preset gstack-paid"),
    });
    expect(await decide(["bun", "test", "--preset"])).toMatchObject({ action: "refuse" });
  });

  test(
    "--preset or --tier given twice is refused, on the " + "legacy command line too, never the last one taken",
    async () => {
      const twice = (flag: string) => ({
        action: "refuse" as const,
        message: `bun test: flag ${flag} was given twice; give it once`,
      });
      expect(await decide(["bun", "test", "--preset", "gstack-paid", "--preset=other"])).toEqual(twice("--preset"));
      expect(await decide(["bun", "test", "--preset=gstack-paid", "--preset=gstack-paid"])).toEqual(twice("--preset"));
      expect(await decide(["bun", "test", "--preset", "gstack-paid", "--tier=gate", "--tier=periodic"])).toEqual(
        twice("--tier"),
      );
      expect(await decide(["bun", "test", "--tier=gate", "test/skill-e2e-a.test.ts", "--tier=periodic"], ON)).toEqual(
        twice("--tier"),
      );
      // Once each still takes over.
      expect(await decide(["bun", "test", "--preset", "gstack-paid", "--tier=gate"])).toMatchObject({
        action: "take-over",
        tier: "gate",
      });
    },
  );

  test("file arguments that are all files of a preset take over (the legacy command line)", async () => {
    expect(
      await decide(["bun", "test", "--retry", "1", "test/skill-e2e-a.test.ts", "./test/skill-e2e-b.test.ts"], {
        ...ON,
        EVALS_TIER: "gate",
      }),
    ).toMatchObject({
      action: "take-over",
      preset: "gstack-paid",
      files: ["test/skill-e2e-a.test.ts", "test/skill-e2e-b.test.ts"],
      tierDefault: false,
    });
    expect(await decide(["bun", "test", path.join(repo, "test/skill-e2e-a.test.ts")], ON)).toMatchObject({
      action: "take-over",
    });
  });

  test(
    "a legacy line without the preset's environment (gstack: EVALS=1) is left alone: its files ran switched " +
      "off, a take-over would switch them on",
    async () => {
      const line = ["bun", "test", "test/skill-e2e-a.test.ts"];
      const none = {
        action: "none" as const,
        why: "preset gstack-paid's EVALS=1 is not in the environment: its files run as plain bun test runs them",
      };
      expect(await decide(line)).toEqual(none);
      expect(await decide(line, { EVALS: "0" })).toEqual(none);
      expect(await decide([...line, "--tier=gate"], { EVALS_TIER: "gate" })).toEqual(none);
      // With --parallel its workers leave it alone too (plain bun test ran it so).
      expect(
        await decide(["bun", "test", "--test-worker", "--isolate"], {}, [
          "bun",
          "test",
          "--parallel",
          ...line.slice(2),
        ]),
      ).toMatchObject({ action: "none" });
      // An explicit --preset is a request to run the preset, environment or not.
      expect(await decide(["bun", "test", "--preset", "gstack-paid"])).toMatchObject({ action: "take-over" });
    },
  );

  test(
    "a bun test started as a shard by another sharded runner (its selection or preflight-ok variable set) is " +
      "left alone",
    async () => {
      const line = [
        "bun",
        "test",
        path.join(repo, "test/skill-e2e-a.test.ts"),
        "--retry",
        "1",
        "--concurrent",
        "--max-concurrency=4",
        "--timeout=60000",
      ];
      expect(await decide(line, { ...ON, EVALS_SELECTION_JSON: '{"version":1,"selected":null,"reason":"x"}' })).toEqual(
        {
          action: "none",
          why: "started as a shard by another sharded runner (EVALS_SELECTION_JSON is set)",
        },
      );
      expect(await decide(line, { ...ON, EVALS_PREFLIGHT_OK: "1" })).toMatchObject({
        action: "none",
        why: expect.stringContaining("EVALS_PREFLIGHT_OK is set"),
      });
      // Empty counts as unset; an explicit --preset is a request to run the preset.
      expect(await decide(line, { ...ON, EVALS_PREFLIGHT_OK: "" })).toMatchObject({ action: "take-over" });
      expect(await decide(["bun", "test", "--preset", "gstack-paid"], { EVALS_PREFLIGHT_OK: "1" })).toMatchObject({
        action: "take-over",
      });
    },
  );

  test("anything else leaves bun test alone", async () => {
    expect(await decide(["bun", "test"])).toMatchObject({ action: "none" });
    expect(await decide(["bun", "test", "skill-e2e"])).toMatchObject({ action: "none" }); // a filter, not a file
    expect(await decide(["bun", "test", "test/skill-e2e-a.test.ts", "test/unit.test.ts"])).toMatchObject({
      action: "none",
    });
    expect(await decide(["bun", "test", "--preset", "gstack-paid"], { SHARDGUARD_SHARD: "1" })).toEqual({
      action: "none",
      why: "inside a shard child",
    });
    expect(await decide(["bun", "test", "--preset", "gstack-paid"], { SHARDGUARD_INTERCEPT: "0" })).toMatchObject({
      action: "none",
    });
    expect(await decide(null)).toMatchObject({ action: "none" });
  });

  test("plain bun test never reads bunfig.toml, so a broken one cannot break it", async () => {
    const broken = tree({ "bunfig.toml": "[shardguard.presets.x]\nnope = 1\n" });
    expect(await decide(["bun", "test"], {}, null, broken)).toMatchObject({ action: "none" });
    expect(await decide(["bun", "test", "some-filter"], {}, null, broken)).toMatchObject({ action: "none" });
  });

  test("--parallel workers never take over; with a preset in the parent command line they refuse", async () => {
    const worker = ["bun", "test", "--test-worker", "--isolate"];
    expect(await decide(worker, {}, ["bun", "test", "--parallel", "--preset", "gstack-paid"])).toMatchObject({
      action: "refuse",
    });
    expect(await decide(worker, ON, ["bun", "test", "--parallel", "test/skill-e2e-a.test.ts"])).toMatchObject({
      action: "refuse",
    });
    expect(await decide(worker, {}, ["bun", "test", "--parallel"])).toMatchObject({ action: "none" });
    expect(await decide(worker, {}, null)).toMatchObject({ action: "none" });
  });

  test("user presets are matched first; intercept-files = false opts a preset out", async () => {
    const dir = tree({
      "test/skill-e2e-a.test.ts": "",
      "bunfig.toml": `[shardguard.presets.mine]\nextends = "gstack-paid"\n`,
    });
    expect(await decide(["bun", "test", "test/skill-e2e-a.test.ts"], ON, null, dir)).toMatchObject({
      action: "take-over",
      preset: "mine",
    });
    const off = tree({
      "test/skill-e2e-a.test.ts": "",
      "bunfig.toml": `[shardguard.presets.gstack-paid]\nintercept-files = false\n`,
    });
    expect(await decide(["bun", "test", "test/skill-e2e-a.test.ts"], ON, null, off)).toMatchObject({
      action: "none",
      why: expect.stringContaining("no preset"),
    });
  });
});

describe("diff decisions", () => {
  const spec = getPreset(loadPresets(tree({})), "gstack-paid").selection as SelectionSpec;
  const touchfiles: Touchfiles = sampleTouchfiles();
  const sources: Record<string, string> = {
    "test/skill-e2e-alpha.test.ts": `test("alpha-basic", () => {})`,
    "test/skill-e2e-beta.test.ts": "describeE2E(`beta-flow`)",
    "test/skill-e2e-built.test.ts": "const name = ['beta', 'flow'].join('-');",
    "test/skill-e2e-none.test.ts": "test('alpha-basics', () => {})",
    "test/skill-e2e-tieronly.test.ts": "'gamma-tier-only'",
  };
  const ctx = {
    root: "/nowhere",
    spec,
    touchfiles,
    read: (f: string) => {
      const s = sources[f];
      if (s === undefined) throw new Error("ENOENT");
      return s;
    },
  };

  test("quoted names match only whole quoted strings", () => {
    expect(quotedNames(`a('alpha-basic'); "beta-flow"; alpha-basics`, ["alpha-basic", "beta-flow", "alpha"])).toEqual([
      "alpha-basic",
      "beta-flow",
    ]);
  });

  test("a file is skippable only when it is provably unselected; everything else fails open", () => {
    const sel = new Set(["alpha-basic"]);
    const d = (f: string, s: Set<string> | null = sel) => decideFile(f, s, ctx);
    expect(d("test/skill-e2e-alpha.test.ts", null)).toMatchObject({ kept: true, reason: "everything runs" });
    expect(d("test/skill-e2e-alpha.test.ts")).toMatchObject({ kept: true, reason: "selected: alpha-basic" });
    expect(d("test/skill-e2e-beta.test.ts")).toMatchObject({ kept: false });
    expect(d("test/skill-e2e-built.test.ts")).toMatchObject({
      kept: false,
      reason: expect.stringContaining("(beta-flow)"),
    });
    expect(d("test/skill-e2e-none.test.ts")).toMatchObject({ kept: true, reason: "no known test name in it: kept" });
    expect(d("test/skill-e2e-tieronly.test.ts")).toMatchObject({ kept: false });
    expect(d("test/skill-e2e-gone.test.ts")).toMatchObject({ kept: true, reason: "source unreadable: kept" });
    expect(d("test/skill-llm-eval.test.ts")).toMatchObject({
      kept: true,
      reason: "outside the skippable naming pattern: always runs",
    });
    expect(d("test/sub/skill-e2e-alpha.test.ts")).toMatchObject({ kept: true });
  });

  test("a shard is skipped only when every one of its files is", () => {
    const shard = (index: number, files: string[]): PlannedShard => ({ index, slug: `s${index}`, files });
    const selection = {
      selected: new Set(["alpha-basic"]),
      reason: "diff vs main: 1 changed file (src/alpha/x.ts)",
      total: 2,
    };
    const r = partitionShards(
      [
        shard(1, ["test/skill-e2e-alpha.test.ts", "test/skill-e2e-beta.test.ts"]),
        shard(2, ["test/skill-e2e-beta.test.ts", "test/skill-e2e-built.test.ts"]),
      ],
      selection,
      ctx,
    );
    expect(r.runnable.map((s) => s.index)).toEqual([1]);
    expect(r.skipped.map((s) => s.shard.index)).toEqual([2]);
    expect(r.skipped[0]!.reason).toStartWith(
      "not selected by the diff (diff vs main: 1 changed file (src/alpha/x.ts)): none of its 1 mapped test " +
        "(beta-flow) selected",
    );
    expect(
      partitionShards([shard(1, ["test/skill-e2e-beta.test.ts"])], { selected: null, reason: "run all", total: 2 }, ctx)
        .skipped,
    ).toEqual([]);
  });

  test("globs, serialization", () => {
    expect(matchesGlob("src/alpha/deep/x.ts", "src/alpha/**")).toBe(true);
    expect(matchesGlob("src/alphabet.ts", "src/alpha/**")).toBe(false);
    expect(matchesGlob("src/beta.ts", "src/beta.ts")).toBe(true);
    expect(JSON.parse(serializeSelection({ selected: new Set(["b", "a"]), reason: "r", total: 2 }))).toEqual({
      version: 1,
      selected: ["a", "b"],
      reason: "r",
    });
    expect(JSON.parse(serializeSelection({ selected: null, reason: "all", total: 2 }))).toEqual({
      version: 1,
      selected: null,
      reason: "all",
    });
  });
});

describe("settings of a preset run", () => {
  const dir = tree({
    "e2e/a.test.ts": "",
    "e2e/b.test.ts": "",
    "other/c.test.ts": "",
    "bunfig.toml":
      `[shardguard]\ngrace = 2\n\n[shardguard.presets.p]\nglobs = ["e2e/*.test.ts"]\njobs = ` +
      `3\ntimeout = 100\nshard-flags = ["--max-concurrency={max-concurrency}", ` +
      `"--timeout={timeout-ms}"]\nknobs = { jobs = "P_JOBS", max-concurrency = "P_CONC", timeout-ms = ` +
      `"P_TIMEOUT_MS" }\n`,
  });
  const prepare = (
    argv: string[],
    env: Record<string, string> = {},
    extra: Partial<Parameters<typeof preparePresetRun>[0]> = {},
  ) =>
    preparePresetRun({
      name: "p",
      via: "--preset",
      cwd: dir,
      env,
      args: parseArgs(argv, "run"),
      commandFlags: [],
      flagsWhere: "bun test",
      ...extra,
    });

  test("precedence: flag > knob variable > SHARDGUARD_* > [shardguard] > preset", async () => {
    const base = await prepare([]);
    expect(base.settings).toMatchObject({ jobs: 3, timeoutMs: 100_000, graceMs: 2_000, filesPerShard: 1 });
    expect(base.jobs.from).toBe("preset p");
    expect(base.settings.bunArgs).toEqual(["--max-concurrency=4", "--timeout=100000"]);
    expect((await prepare([], { SHARDGUARD_JOBS: "5" })).jobs).toEqual({ value: 5, from: "SHARDGUARD_JOBS" });
    expect(base.timeoutMs).toEqual({ value: 100_000, from: "preset p" });
    expect((await prepare([], { SHARDGUARD_JOBS: "5", P_JOBS: "6" })).jobs).toEqual({ value: 6, from: "P_JOBS" });
    expect((await prepare(["--jobs", "7"], { P_JOBS: "6" })).jobs).toEqual({ value: 7, from: "--jobs" });
    const t = await prepare([], { P_TIMEOUT_MS: "2500" });
    expect(t.settings.timeoutMs).toBe(2500);
    expect(t.settings.bunArgs).toContain("--timeout=2500");
    const line = splitBunTestArgs(["--timeout", "4000", "--max-concurrency", "10"]).flags;
    const l = await prepare([], { P_TIMEOUT_MS: "2500" }, { commandFlags: line });
    expect(l.timeoutMs).toEqual({ value: 4000, from: "bun test --timeout" });
    expect(l.maxConcurrency).toEqual({ value: 4, from: "bun test --max-concurrency 10 shared by 3 jobs" });
    expect((await prepare([], { P_CONC: "9" }, { commandFlags: line })).maxConcurrency).toEqual({
      value: 9,
      from: "P_CONC",
    });
  });

  test("a preset's empty-files is below [shardguard] and SHARDGUARD_EMPTY_FILES; gstack-paid's is fail", async () => {
    expect((await prepare([])).settings.emptyFiles).toBe("pass");
    const paid = tree({ "test/skill-llm-eval.test.ts": "" });
    const paidRun = (env: Record<string, string>) =>
      preparePresetRun({
        name: "gstack-paid",
        via: "--preset",
        cwd: paid,
        env,
        args: parseArgs([], "run"),
        commandFlags: [],
        flagsWhere: "bun test",
      });
    const gstack = await paidRun({});
    expect(gstack.settings.emptyFiles).toBe("fail");
    const relaxed = await paidRun({ SHARDGUARD_EMPTY_FILES: "pass" });
    expect(relaxed.settings.emptyFiles).toBe("pass");
  });

  test("file limits, and errors found before anything runs", async () => {
    expect((await prepare([], {}, { files: ["e2e/b.test.ts"] })).plan.shards.map((s) => s.files)).toEqual([
      ["e2e/b.test.ts"],
    ]);
    expect((await prepare([], {}, { patterns: ["e2e/a*"] })).plan.shards.map((s) => s.files)).toEqual([
      ["e2e/a.test.ts"],
    ]);
    expect(await configErrorAsync(() => prepare([], {}, { files: ["other/c.test.ts"] }))).toBe(
      'invalid file "other/c.test.ts": not one of preset p\'s files (globs: e2e/*.test.ts)',
    );
    expect(await configErrorAsync(() => prepare([], {}, { tier: "gate" }))).toContain("preset p has no tiers");
    expect(await configErrorAsync(() => prepare([], { P_JOBS: "x" }))).toContain('invalid P_JOBS "x"');
    expect(await configErrorAsync(() => prepare([], { P_TIMEOUT_MS: "1.5" }))).toContain(
      "whole number of milliseconds",
    );
    expect(await configErrorAsync(() => prepare([], {}, { name: "nope" }))).toContain("no such preset");
    expect(
      await configErrorAsync(() => prepare([], {}, { commandFlags: splitBunTestArgs(["--watch"]).flags })),
    ).toContain("--watch cannot be used with a preset");
  });
});

describe("the shardguard command with presets", () => {
  const lines: string[] = [];
  const host: Host = {
    env: {},
    cwd: tree({}),
    stdout: (t) => lines.push(t),
    stderr: (t) => lines.push(t),
    onSignal: () => {},
  };

  test("--tier without --preset, and stray init flags, are usage errors", async () => {
    expect(await main(["list", "--tier", "gate"], host)).toBe(2);
    expect(lines.at(-1)).toBe("shardguard: flag --tier needs --preset NAME (tiers belong to a preset)");
    expect(await main(["init", "--jobs", "3"], host)).toBe(2);
    expect(lines.at(-1)).toContain("shardguard init takes only --preset NAME, --dry-run and --root DIR");
    expect(await main(["run", "--preset", "gstack-paid", "--", "some-file.test.ts"], host)).toBe(2);
    expect(lines.at(-1)).toContain('bun test flags after "--" cannot include files');
  });
});
