/**
 * The touchfiles data of diff selection: loading it (module or JSON), the
 * local modules it is built from, the map diff against the base ref, and
 * the selection computed from real git repositories in temp dirs.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { computeSelection, loadTouchfiles, type Touchfiles } from "../runner/presets/diff.ts";
import { getPreset, loadPresets } from "../runner/presets/resolve.ts";
import type { SelectionSpec } from "../runner/presets/preset-schema.ts";
import { diffTouchfiles, moduleClosure } from "../runner/presets/touchfiles.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";
import { configErrorAsync } from "./helpers/config-error.ts";
import { sampleTouchfiles } from "./helpers/touchfiles-fixture.ts";

afterAll(removeSuites);

/** A temp dir holding `files` (relative path → text), removed after the file's tests. */
const tree = (files: Record<string, string>): string => makeSuite(files, "sg-touchfiles-");

describe("touchfiles data and the map diff", () => {
  const spec = getPreset(loadPresets(tree({})), "gstack-paid").selection as SelectionSpec;
  const touchfiles: Touchfiles = sampleTouchfiles();

  test("touchfiles load from a JSON file too; a missing export is a config error", async () => {
    const dir = tree({
      "tf.json": JSON.stringify({ E2E_TOUCHFILES: { a: ["x/**"] }, GLOBAL_TOUCHFILES: [], E2E_TIERS: { b: "gate" } }),
      "bad.json": JSON.stringify({ E2E_TOUCHFILES: { a: "x" } }),
    });
    expect(await loadTouchfiles(dir, { ...spec, touchfiles: "tf.json" })).toEqual({
      map: { a: ["x/**"] },
      global: [],
      names: ["a", "b"],
      file: "tf.json",
      tables: { E2E_TOUCHFILES: { a: ["x/**"] }, E2E_TIERS: { b: "gate" } },
      sources: ["tf.json"],
    });
    expect(await configErrorAsync(() => loadTouchfiles(dir, { ...spec, touchfiles: "bad.json" }))).toContain(
      "export E2E_TOUCHFILES: expected an object of test name",
    );
    // No module at all: selection is off and everything runs (fail open).
    expect(await loadTouchfiles(dir, { ...spec, touchfiles: "nope.ts" })).toBeNull();
  });

  test("a module is loaded by a separate process: one that hangs is killed after the timeout, one that throws or " +
    "exits is named, neither touches this process", async () => {
    const dir = tree({
      "ok.ts":
        `(globalThis as any).__sgTouched = 1;\nexport const E2E_TOUCHFILES = { a: ["x/**"] };\nexport ` +
        `const GLOBAL_TOUCHFILES: string[] = [];\nexport const helper = () => 1;\n`,
      "hang.ts": `await Bun.sleep(600_000);\nexport const E2E_TOUCHFILES = {};\nexport const GLOBAL_TOUCHFILES = [];\n`,
      "throws.ts": `throw new Error("no data here");\n`,
      "exits.ts": `process.exit(3);\n`,
    });
    const ok = await loadTouchfiles(dir, { ...spec, touchfiles: "ok.ts" });
    expect(ok?.map).toEqual({ a: ["x/**"] });
    expect((globalThis as { __sgTouched?: number }).__sgTouched).toBeUndefined();
    const t0 = performance.now();
    expect(await configErrorAsync(() => loadTouchfiles(dir, { ...spec, touchfiles: "hang.ts" }, 1_000))).toContain(
      'invalid selection touchfiles "hang.ts": could not load it (it did not finish loading within 1s)',
    );
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(await configErrorAsync(() => loadTouchfiles(dir, { ...spec, touchfiles: "throws.ts" }))).toContain(
      "no data here",
    );
    expect(await configErrorAsync(() => loadTouchfiles(dir, { ...spec, touchfiles: "exits.ts" }))).toContain(
      "could not load it (exit 3)",
    );
  }, 30_000);

  test(
    "with git: global touchfiles select everything; a touchfiles source whose old version cannot be loaded " +
      "too; shardguard's output never counts",
    async () => {
      const dir = tree({ "src/alpha/x.ts": "1", "package.json": "{}", "test/helpers/touchfiles.ts": "" });
      const git = (...args: string[]) => {
        const r = spawnSync("git", args, {
          cwd: dir,
          encoding: "utf8",
          env: {
            ...process.env,
            GIT_AUTHOR_NAME: "t",
            GIT_AUTHOR_EMAIL: "t@x",
            GIT_COMMITTER_NAME: "t",
            GIT_COMMITTER_EMAIL: "t@x",
            GIT_CONFIG_GLOBAL: "/dev/null",
          },
        });
        if (r.status !== 0) throw new Error(r.stderr);
      };
      git("init", "-q", "-b", "main");
      git("add", "-A");
      git("commit", "-q", "-m", "x");
      const sel = (env: Record<string, string> = {}) =>
        computeSelection({ root: dir, env, spec, touchfiles, ignore: [".shardguard"] });
      expect((await sel()).reason).toBe("run all (no changes vs main)");
      writeFileSync(path.join(dir, "src/alpha/x.ts"), "2");
      mkdirSync(path.join(dir, ".shardguard"));
      writeFileSync(path.join(dir, ".shardguard/report.json"), "{}");
      expect(await sel()).toEqual({
        selected: new Set(["alpha-basic"]),
        reason: "diff vs main: 1 changed file (src/alpha/x.ts)",
        total: 2,
        changed: ["src/alpha/x.ts"],
      });
      // Files that selected something come first in the cut list; every file is kept.
      for (const f of ["a.md", "b.md", "c.md"]) writeFileSync(path.join(dir, f), "x");
      expect(await sel()).toMatchObject({
        reason: "diff vs main: 4 changed files (src/alpha/x.ts, a.md, b.md, …)",
        changed: ["src/alpha/x.ts", "a.md", "b.md", "c.md"],
      });
      for (const f of ["a.md", "b.md", "c.md"]) rmSync(path.join(dir, f));
      writeFileSync(path.join(dir, "package.json"), "{ }");
      expect(await sel()).toMatchObject({ selected: null, reason: "run all (global touchfile changed: package.json)" });
      git("checkout", "--", "package.json");
      // The module at main exports nothing: no map diff is possible, so everything runs.
      writeFileSync(path.join(dir, "test/helpers/touchfiles.ts"), "// edited");
      expect(await sel()).toMatchObject({
        selected: null,
        reason: expect.stringContaining(
          "run all (the touchfiles source test/helpers/touchfiles.ts changed; no map diff: ",
        ),
      });
      expect((await sel({ EVALS_ALL: "1" })).reason).toBe("run all (EVALS_ALL is set)");
      expect(await configErrorAsync(() => sel({ EVALS_BASE: "missing-ref" }))).toContain(
        "git diff --name-only --relative missing-ref...HEAD failed",
      );
    },
  );

  test(
    "map diff: an edit to a data module the touchfiles " + "module imports selects the tests whose entries changed",
    async () => {
      const data = (alpha: string, tier: string, extra = "") =>
        `export const E2E_TOUCHFILES = { "alpha-basic": [${alpha}], "beta-flow": ["src/beta.ts"]${extra} };\n` +
        `export const E2E_TIERS = { "alpha-basic": "gate", "beta-flow": "${tier}" };\nexport const ` +
        `GLOBAL_TOUCHFILES = ["package.json"];\n`;
      // One repository per case: a process imports a module once (Bun caches it by path).
      const repo = () => {
        const dir = tree({
          "test/helpers/touchfiles.ts":
            `export { E2E_TOUCHFILES, E2E_TIERS, GLOBAL_TOUCHFILES } from ` +
            `"./touchfiles-data";\nexport * from "./select";\n`,
          "test/helpers/select.ts": `import type { X } from "./types";\nexport const pick = 1;\n`,
          "test/helpers/types.ts": "export type X = 1;\n",
          "test/helpers/touchfiles-data.ts": data(`"src/alpha.ts"`, "gate"),
          "src/other.ts": "1",
        });
        for (const args of [
          ["init", "-q", "-b", "main"],
          ["add", "-A"],
          ["commit", "-q", "-m", "x"],
        ]) {
          const env = {
            ...process.env,
            GIT_AUTHOR_NAME: "t",
            GIT_AUTHOR_EMAIL: "t@x",
            GIT_COMMITTER_NAME: "t",
            GIT_COMMITTER_EMAIL: "t@x",
            GIT_CONFIG_GLOBAL: "/dev/null",
          };
          const r = spawnSync("git", args, { cwd: dir, encoding: "utf8", env });
          if (r.status !== 0) throw new Error(r.stderr);
        }
        return dir;
      };
      const dir = repo();
      expect(moduleClosure(dir, "test/helpers/touchfiles.ts")).toEqual([
        "test/helpers/touchfiles.ts",
        "test/helpers/select.ts",
        "test/helpers/touchfiles-data.ts",
      ]);
      // A new glob in one entry, a tier flip in another, plus an unrelated file.
      writeFileSync(
        path.join(dir, "test/helpers/touchfiles-data.ts"),
        data(`"src/alpha.ts", "src/alpha2.ts"`, "periodic"),
      );
      writeFileSync(path.join(dir, "src/other.ts"), "2");
      const now = (await loadTouchfiles(dir, spec))!;
      expect(now.sources).toEqual([
        "test/helpers/touchfiles.ts",
        "test/helpers/select.ts",
        "test/helpers/touchfiles-data.ts",
      ]);
      const sel = await computeSelection({ root: dir, env: {}, spec, touchfiles: now });
      expect(sel.selected).toEqual(new Set(["alpha-basic", "beta-flow"]));
      expect(sel.reason).toBe(
        "diff vs main: 2 changed files (test/helpers/touchfiles-data.ts, src/other.ts); map diff of " +
          "test/helpers/touchfiles-data.ts: 2 entries changed (alpha-basic, beta-flow)",
      );
      // A logic-only edit changes no entry: nothing is selected by it.
      const other = repo();
      writeFileSync(path.join(other, "test/helpers/select.ts"), "export const pick = 2;\n");
      const logic = await computeSelection({
        root: other,
        env: {},
        spec,
        touchfiles: (await loadTouchfiles(other, spec))!,
      });
      expect(logic.selected).toEqual(new Set());
      expect(logic.reason).toContain("map diff of test/helpers/select.ts: 0 entries changed");
      expect(
        diffTouchfiles(
          { ...now, tables: { T: { a: 1, b: 2 }, U: { c: 1 } } },
          { ...now, tables: { T: { a: 1, c: 1 } } },
        ),
      ).toEqual({
        changed: ["c"],
        removed: ["b"],
        globalChanged: false,
      });
      expect(diffTouchfiles(now, { ...now, global: ["x"] }).globalChanged).toBe(true);
    },
  );
});
