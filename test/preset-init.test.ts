/**
 * `shardguard init`: the real CLI in temp dirs. What it writes, that a
 * second run changes nothing, that --dry-run writes nothing, and that the
 * bunfig.toml edit keeps everything that was there.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
const parseToml = (text: string) => Bun.TOML.parse(text) as Record<string, unknown>;
import { ConfigError } from "../runner/config/settings-schema.ts";
import { addPreload, addScript } from "../runner/presets/init.ts";
import { removeSuites, tempDir } from "./helpers/cli.ts";

const REPO = path.resolve(import.meta.dir, "..");
const CLI = path.join(REPO, "runner", "cli-entry.ts");
const SPEC = "shardguard/preset/preload.ts";
afterAll(removeSuites);

/**
 * A project dir with `files` (a package.json `{}` unless given; null: none), and shardguard installed as
 * node_modules/shardguard (a symlink to this checkout).
 */
function project(files: Record<string, string | null>, installed = true): string {
  const dir = tempDir("sg-init-");
  for (const [rel, text] of Object.entries({ "package.json": "{}\n", ...files })) {
    if (text === null) continue;
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  if (installed) {
    mkdirSync(path.join(dir, "node_modules"));
    symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"), "dir");
  }
  return dir;
}

function init(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, "init", ...args], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every file under `dir` (node_modules left out) with its content. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(path.join(dir, rel))) {
      if (e === "node_modules") continue;
      const r = path.join(rel, e);
      if (statSync(path.join(dir, r)).isDirectory()) walk(r);
      else out[r] = readFileSync(path.join(dir, r), "utf8");
    }
  };
  walk(".");
  return out;
}

describe("shardguard init", () => {
  test("--help describes each flag init accepts, --root included", () => {
    const r = init(os.tmpdir(), "--help");
    expect(r.code).toBe(0);
    const usage = r.stdout.split("\n")[0]!;
    const flags = [...usage.matchAll(/--[a-z-]+/g)].map((m) => m[0]);
    expect(flags).toEqual(["--preset", "--dry-run", "--root"]);
    for (const flag of flags) expect(r.stdout).toMatch(new RegExp(`^  ${flag}\\b.* \\w`, "m"));
    expect(r.stdout).toContain("SHARDGUARD_ROOT");
  });

  test("--preset gstack-paid writes the preload, the entry file and the script; a second run changes nothing", () => {
    const dir = project({
      "package.json": `{\n    "name": "x",\n    "scripts": {\n        "test": "bun test"\n    }\n}\n`,
      "test/skill-e2e-a.test.ts": "",
    });
    const first = init(dir, "--preset", "gstack-paid");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`shardguard init: bunfig.toml: created: [test] preload = ["${SPEC}"]`);
    expect(first.stdout).toContain("shardguard init: test/shardguard.gstack-paid.test.ts: created");
    expect(first.stdout).toContain(
      `shardguard init: package.json: updated: added script "test:gate": "bun test --preset gstack-paid"`,
    );
    expect(readFileSync(path.join(dir, "bunfig.toml"), "utf8")).toBe(`[test]\npreload = ["${SPEC}"]\n`);
    const pkg = readFileSync(path.join(dir, "package.json"), "utf8");
    expect(pkg).toBe(
      `{\n    "name": "x",\n    "scripts": {\n        "test": "bun test",\n        "test:gate": "bun test ` +
        `--preset gstack-paid"\n    }\n}\n`,
    );
    const entry = readFileSync(path.join(dir, "test", "shardguard.gstack-paid.test.ts"), "utf8");
    expect(entry).toContain(`from "shardguard/preset/entry.ts"`);

    const before = snapshot(dir);
    const second = init(dir, "--preset", "gstack-paid");
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("shardguard init: already set up, nothing changed");
    expect(second.stdout.match(/: unchanged: /g)).toHaveLength(4);
    expect(snapshot(dir)).toEqual(before);

    // The entry file is a real test under plain `bun test`.
    const plain = spawnSync(process.execPath, ["test", "test/shardguard.gstack-paid.test.ts"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, SHARDGUARD_SHARD: "" },
    });
    expect(plain.status).toBe(0);
    expect(plain.stderr).toContain("1 pass");
  });

  test(
    ".shardguard/ goes into .gitignore: created when missing, " + "appended once, an existing entry in any form kept",
    () => {
      const fresh = project({});
      expect(init(fresh).stdout).toContain("shardguard init: .gitignore: created: ignores .shardguard/");
      expect(readFileSync(path.join(fresh, ".gitignore"), "utf8")).toBe(".shardguard/\n");
      expect(init(fresh).stdout).toContain("shardguard init: .gitignore: unchanged");
      expect(readFileSync(path.join(fresh, ".gitignore"), "utf8")).toBe(".shardguard/\n");

      const noNewline = project({ ".gitignore": "node_modules/\n# built\ndist" });
      init(noNewline);
      init(noNewline);
      expect(readFileSync(path.join(noNewline, ".gitignore"), "utf8")).toBe(
        "node_modules/\n# built\ndist\n.shardguard/\n",
      );

      for (const form of ["/.shardguard", ".shardguard", "  /.shardguard/  "]) {
        const had = project({ ".gitignore": `dist\n${form}\n` });
        expect(init(had).stdout).toContain(".gitignore: unchanged");
        expect(readFileSync(path.join(had, ".gitignore"), "utf8")).toBe(`dist\n${form}\n`);
      }
      // A commented-out line does not count.
      const commented = project({ ".gitignore": "# .shardguard/\n" });
      init(commented);
      expect(readFileSync(path.join(commented, ".gitignore"), "utf8")).toBe("# .shardguard/\n.shardguard/\n");
    },
  );

  test("where there is no package.json: one line naming it, exit 2, nothing written", () => {
    const dir = project({ "package.json": null, "bunfig.toml": "[test]\n" });
    const before = snapshot(dir);
    const r = init(dir);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toEqual([
      `shardguard: init: ${dir} has no package.json; run it in the project's root (where package.json is) or pass --root DIR`,
    ]);
    expect(snapshot(dir)).toEqual(before);
  });

  test("--dry-run prints the changes and writes nothing", () => {
    const dir = project({ "bunfig.toml": `[test]\nroot = "tests"\n`, "tests/skill-e2e-a.test.ts": "" });
    const before = snapshot(dir);
    const r = init(dir, "--preset", "gstack-paid", "--dry-run");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`shardguard init: bunfig.toml: would update: added "${SPEC}" to [test] preload`);
    expect(r.stdout).toContain(`    preload = ["${SPEC}"]`);
    expect(r.stdout).toContain("shardguard init: tests/shardguard.gstack-paid.test.ts: would create");
    expect(r.stdout).toContain("shardguard init: package.json: would update: added script");
    expect(r.stdout).toContain("shardguard init: dry run, nothing written");
    expect(snapshot(dir)).toEqual(before);
  });

  test("an existing script of the same name is kept; without --preset only the preload is added", () => {
    const dir = project({ "package.json": `{"scripts":{"test:gate":"EVALS=1 bun test test/skill-e2e-*.test.ts"}}` });
    const r = init(dir, "--preset", "gstack-paid");
    expect(r.stdout).toContain(`package.json: kept: script "test:gate" exists and was kept`);
    expect(readFileSync(path.join(dir, "package.json"), "utf8")).toBe(
      `{"scripts":{"test:gate":"EVALS=1 bun test test/skill-e2e-*.test.ts"}}`,
    );
    const bare = project({});
    expect(init(bare).code).toBe(0);
    expect(readdirSync(bare).sort()).toEqual([".gitignore", "bunfig.toml", "node_modules", "package.json"]);
  });

  test(
    "an unknown preset exits 2 and writes nothing; a project without node_modules/shardguard gets a path to " +
      "this copy",
    () => {
      const dir = project({}, false);
      const bad = init(dir, "--preset", "gstack-pad");
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim()).toBe(
        'shardguard: invalid --preset "gstack-pad": no such preset; accepted: gstack-paid',
      );
      expect(existsSync(path.join(dir, "bunfig.toml"))).toBe(false);
      const ok = init(dir);
      expect(ok.stdout).toContain("has no shardguard");
      const preload = (
        parseToml(readFileSync(path.join(dir, "bunfig.toml"), "utf8")) as { test: { preload: string[] } }
      ).test.preload[0]!;
      expect(path.resolve(dir, preload)).toBe(path.join(REPO, "preset", "preload.ts"));
    },
  );
});

describe("editing bunfig.toml", () => {
  test("keeps other preloads, keys and comments; adds to strings, arrays, multi-line arrays", () => {
    const cases: [string, string][] = [
      [`[test]\npreload = "./setup.ts"\n`, `[test]\npreload = ["./setup.ts", "${SPEC}"]\n`],
      [`[test]\npreload = []\n`, `[test]\npreload = ["${SPEC}"]\n`],
      [
        `# top\n[install]\nexact = true\n\n[test] # ours\nroot = "test" # keep\npreload = ["./a.ts"] # ` +
          `trailing\n\n[run]\nbun = true\n`,
        `# top\n[install]\nexact = true\n\n[test] # ours\nroot = "test" # keep\npreload = ["./a.ts", "${SPEC}"] # ` +
          `trailing\n\n[run]\nbun = true\n`,
      ],
      [
        `[test]\npreload = [\n  "./a.ts", # first\n  './b.ts',\n]\n`,
        `[test]\npreload = [\n  "./a.ts", # first\n  './b.ts', "${SPEC}"\n]\n`,
      ],
      [
        `[test]\nroot = "x"\n[other]\npreload = 1\n`,
        `[test]\npreload = ["${SPEC}"]\nroot = "x"\n[other]\npreload = 1\n`,
      ],
      [`[install]\nexact = true`, `[install]\nexact = true\n\n[test]\npreload = ["${SPEC}"]\n`],
      [``, `[test]\npreload = ["${SPEC}"]\n`],
    ];
    for (const [before, after] of cases) expect(addPreload(before, SPEC)).toBe(after);
  });

  test("is idempotent and recognises our preload however it is written", () => {
    expect(addPreload(`[test]\npreload = ["${SPEC}"]\n`, SPEC)).toBeNull();
    expect(
      addPreload(`[test]\npreload = ["../node_modules/shardguard/preset/preload.ts"]\n`, SPEC, (e) =>
        e.endsWith("shardguard/preset/preload.ts"),
      ),
    ).toBeNull();
  });

  test("refuses what it cannot edit safely", () => {
    expect(() => addPreload(`test = { preload = ["./a.ts"] }\n`, SPEC)).toThrow(ConfigError);
    expect(() => addPreload(`[test]\npreload = 3\n`, SPEC)).toThrow(ConfigError);
    expect(() => addPreload(`[test\n`, SPEC)).toThrow(ConfigError);
  });

  test("package.json keeps its indentation and final newline", () => {
    expect(addScript(`{\n\t"a": 1\n}`, "t", "c")).toEqual({
      text: `{\n\t"a": 1,\n\t"scripts": {\n\t\t"t": "c"\n\t}\n}`,
      existing: null,
    });
    expect(addScript(`{"scripts":{"t":"c"}}`, "t", "c")).toEqual({ text: null, existing: "c" });
  });
});
