/**
 * Mistakes on a `bun test --preset NAME ...` line, through real `bun test` processes whose preload
 * (`shardguard/preset/preload.ts`, the installed form) takes the run over: each is shardguard's own one line and
 * exit 2 before any shard starts; a preset name that matches no file never reaches the preload.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, REPO, removeSuites, runCli, withoutCiVariables } from "./helpers/cli.ts";
import { bunBinary, SUPPORTED_BUNS } from "./helpers/bun-versions.ts";

afterAll(removeSuites);

const PASSING = `import { expect, test } from "bun:test";\ntest("adds", () => expect(1 + 1).toBe(2));\n`;

/** A project with the preload registered and preset `integration`; `extra` is appended to bunfig.toml. */
function project(extra = ""): string {
  const dir = makeSuite({
    "package.json": `{"name":"consumer","private":true}\n`,
    "bunfig.toml":
      `[test]\npreload = ["shardguard/preset/preload.ts"]\n\n` +
      `[shardguard.presets.integration]\nglobs = ["test/integration/**/*.test.ts"]\n${extra}`,
    "test/integration/math.test.ts": PASSING,
    "test/unit.test.ts": PASSING,
  });
  mkdirSync(path.join(dir, "node_modules"));
  symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"), "dir");
  return dir;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bunTest(dir: string, args: string[], bun = process.execPath): Ran {
  const env = withoutCiVariables(process.env);
  for (const k of Object.keys(env)) if (k.startsWith("SHARDGUARD_") || k === "BUN_TEST_WORKER_ID") delete env[k];
  const r = spawnSync(bun, ["test", ...args], { cwd: dir, env: { ...env, NO_COLOR: "1" }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

const ownLines = (r: Ran) => `${r.stdout}${r.stderr}`.split("\n").filter((l) => l.startsWith("shardguard"));

describe("an unknown flag on a bun test --preset line", () => {
  const dir = project();

  test(
    "--jbos 2: one line and exit 2 naming --jbos (did you mean --jobs), not Bun's reading of 2 as a file",
    () => {
      const r = bunTest(dir, ["--preset", "integration", "--jbos", "2"]);
      expect(r.code).toBe(2);
      expect(ownLines(r)).toEqual([
        "shardguard: bun test: unknown flag --jbos; did you mean --jobs (a shardguard run flag: shardguard run " +
          "--preset NAME --jobs VALUE)? Bun and every shard would ignore --jbos",
      ]);
    },
    { timeout: 60_000 },
  );

  test(
    "--retyr=1 is a typo of Bun's --retry; --frobnicate gets no guess; neither starts a shard",
    () => {
      const retry = bunTest(dir, ["--preset", "integration", "--retyr=1"]);
      expect(retry.code).toBe(2);
      expect(ownLines(retry)).toEqual([
        "shardguard: bun test: unknown flag --retyr; did you mean --retry? Bun and every shard would ignore --retyr",
      ]);
      const none = bunTest(dir, ["--preset", "integration", "--frobnicate"]);
      expect(none.code).toBe(2);
      expect(ownLines(none)).toEqual([
        "shardguard: bun test: unknown flag --frobnicate; Bun and every shard would ignore it (bun test --help lists " +
          "Bun's flags)",
      ]);
      expect(existsSync(path.join(dir, ".shardguard", "report.json"))).toBe(false);
    },
    { timeout: 60_000 },
  );

  test(
    "Bun's own runtime and test flags (--smol, --only-failures) pass on to the shards",
    () => {
      const r = bunTest(dir, ["--preset", "integration", "--smol", "--only-failures"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("shardguard: shard flags: --smol --only-failures");
      expect(readReport(dir).summary.tests.passed).toBe(1);
    },
    { timeout: 60_000 },
  );
});

describe("a preset's numbers read as [shardguard]'s", () => {
  const tables = { preset: "", "[shardguard]": "\n[shardguard]\n" } as const;
  for (const [name, table] of Object.entries(tables)) {
    test(
      `timeout = "10" in the ${name} table is 10 s; "abc" is one line naming the table, value and what is accepted`,
      () => {
        const ok = project(`${table}timeout = "10"\n`);
        const r = bunTest(ok, ["--preset", "integration"]);
        expect(r.code).toBe(0);
        expect(r.stdout).toContain(", timeout 10s (");
        const bad = bunTest(project(`${table}timeout = "abc"\n`), ["--preset", "integration"]);
        expect(bad.code).toBe(2);
        const where = name === "preset" ? "[shardguard.presets.integration]" : "[shardguard]";
        expect(ownLines(bad)).toEqual([
          `shardguard: invalid bunfig.toml ${where} timeout "abc": expected a number of seconds from 0.001 to 2147483`,
        ]);
      },
      { timeout: 60_000 },
    );
  }
});

describe("list --preset shows only what reaches the shards", () => {
  test(
    "no max-concurrency for a preset whose shard flags never use it; a line's --max-concurrency is passed on",
    async () => {
      const dir = project();
      const listed = await runCli(["list", "--preset", "integration"], { cwd: dir });
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain("shardguard: shard flags: (none)");
      expect(listed.stdout).not.toContain("max-concurrency");
      const r = bunTest(dir, ["--preset", "integration", "--max-concurrency", "8"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("max-concurrency 2 per shard (bun test --max-concurrency 8 shared by 4 jobs)");
      expect(r.stdout).toContain("shardguard: shard flags: --max-concurrency=2");
      const used = project(`shard-flags = ["--max-concurrency={max-concurrency}"]\n`);
      const shown = await runCli(["list", "--preset", "integration"], { cwd: used });
      expect(shown.stdout).toContain("max-concurrency 4 per shard (preset integration)");
    },
    { timeout: 60_000 },
  );
});

describe("an unknown preset name", () => {
  test("README.md and docs/presets.md say so with Bun's message, since the preload never sees it", () => {
    for (const doc of ["README.md", path.join("docs", "presets.md")]) {
      const text = readFileSync(path.join(REPO, doc), "utf8").replace(/\s+/g, " ");
      expect(text).toContain(`"The following filters did not match any test files: nosuch"`);
    }
  });

  for (const version of SUPPORTED_BUNS) {
    test(
      `Bun ${version} stops with its filter message and exit 1 before the preload runs`,
      async () => {
        const dir = project();
        // A preload that leaves a mark, before shardguard's: it shows whether any preload ran.
        writeFileSync(path.join(dir, "mark.ts"), `require("node:fs").writeFileSync("preload-ran", "");\n`);
        writeFileSync(
          path.join(dir, "bunfig.toml"),
          `[test]\npreload = ["./mark.ts", "shardguard/preset/preload.ts"]\n\n` +
            `[shardguard.presets.integration]\nglobs = ["test/integration/**/*.test.ts"]\n`,
        );
        const r = bunTest(dir, ["--preset", "nosuch"], await bunBinary(version));
        expect(r.code).toBe(1);
        expect(r.stderr).toContain("The following filters did not match any test files:\n nosuch");
        expect(ownLines(r)).toEqual([]);
        expect(existsSync(path.join(dir, "preload-ran"))).toBe(false);
        // The mark works: a line whose filter matches a file runs the preloads.
        expect(bunTest(dir, ["unit"], await bunBinary(version)).code).toBe(0);
        expect(existsSync(path.join(dir, "preload-ran"))).toBe(true);
      },
      { timeout: 120_000 },
    );
  }
});
