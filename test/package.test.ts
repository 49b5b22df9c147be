/**
 * The package as a user gets it: `npm pack` this checkout, `bun add -d` the
 * tarball into a fresh project (dependencies come from the npm registry, as
 * in CI), then, in that project, `shardguard run`, `shardguard init --preset
 * gstack-paid`, `bun test --preset gstack-paid`, and `import … from
 * "shardguard"`. One install, reused by every test; a second project made by
 * `bun init -y` checks that the package passes the user's own type check.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { RunReportSchema, type RunReport } from "../runner/results/report-model.ts";
import { COMPILED_CLI, freshCompiledCli } from "../runner/cli/compiled.ts";
import { REPO, tempDir } from "./helpers/cli.ts";
import { apiExample } from "./helpers/api-doc.ts";
import { OLDEST_SUPPORTED_BUN } from "../runner/results/bun-capabilities.ts";

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

let base: string;
let project: string;
let tarball: string;
let packed: { files: { path: string }[] };
let install: Ran;
let env: Record<string, string>;

function run(argv: string[], cwd: string, timeout = 120_000): Ran {
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd, env, encoding: "utf8", timeout });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

const report = (): RunReport =>
  RunReportSchema.parse(JSON.parse(readFileSync(path.join(project, ".shardguard", "report.json"), "utf8")));

beforeAll(() => {
  base = tempDir("sg-pack-");
  // The npm package of Bun names its binary bun.exe: a `bun` on PATH for the
  // bin's `#!/usr/bin/env bun` and for package scripts.
  const bin = path.join(base, "bin");
  mkdirSync(bin);
  symlinkSync(process.execPath, path.join(bin, "bun"));
  env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      !/^(SHARDGUARD_.*|GITHUB_(ACTIONS|STEP_SUMMARY|WORKSPACE)|EVALS.*|BUN_TEST_WORKER_ID)$/.test(k)
    )
      env[k] = v;
  }
  env.PATH = `${bin}${path.delimiter}${env.PATH ?? ""}`;
  env.NO_COLOR = "1";

  const pack = run(["npm", "pack", "--json", "--pack-destination", base], REPO);
  if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.stderr}`);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  packed = info!;
  tarball = path.join(base, info!.filename);

  project = path.join(base, "project");
  mkdirSync(path.join(project, "test"), { recursive: true });
  writeFileSync(
    path.join(project, "package.json"),
    `${JSON.stringify({ name: "consumer", private: true, scripts: { test: "bun test" } }, null, 2)}\n`,
  );
  writeFileSync(
    path.join(project, "test", "math.test.ts"),
    `import { expect, test } from "bun:test";\ntest("adds", () => expect(1 + 1).toBe(2));\n`,
  );
  writeFileSync(
    path.join(project, "test", "skill-e2e-demo.test.ts"),
    `import { expect, test } from "bun:test";\ntest("agent answers", () => expect(1).toBe(1));\n`,
  );
  install = run([process.execPath, "add", "-d", tarball], project);
}, 180_000);

afterAll(() => {
  if (base) rmSync(base, { recursive: true, force: true });
});

describe("npm pack", () => {
  test("ships runner/, the compiled CLI in dist/, preset/, docs/, README and LICENSE only", () => {
    const paths = packed.files.map((f) => f.path);
    const tops = [...new Set(paths.map((p) => p.split("/")[0]))].sort();
    expect(tops).toEqual(["LICENSE", "README.md", "dist", "docs", "package.json", "preset", "runner"]);
    expect(paths.filter((p) => p.startsWith("dist/")).sort()).toEqual([
      "dist/shardguard.cjs",
      "dist/shardguard.cjs.jsc",
      "dist/shardguard.cjs.sources",
    ]);
    const needed = ["runner/index.ts", "runner/cli-entry.ts", "runner/cli-bin.ts", "runner/child/shard-preload.ts"];
    // report.html's script and style sheet: the sources import them as text.
    needed.push("runner/report/html-page.client.js", "runner/report/html-page.css");
    for (const file of [...needed, "preset/preload.ts", "preset/entry.ts", "docs/reports.md"]) {
      expect(paths).toContain(file);
    }
    expect(paths.some((p) => /(^|\/)(test|bench|examples)\//.test(p))).toBe(false);
  });

  test("package.json: publishable, with exports, bin and engines", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8"));
    expect(pkg.private).toBeUndefined();
    expect(pkg.license).toBe("MIT");
    expect(pkg.repository).toEqual({ type: "git", url: "git+https://github.com/shardguard/shardguard.git" });
    expect(readFileSync(path.join(REPO, "LICENSE"), "utf8")).toStartWith("MIT License");
    // Bun (and TypeScript) get the sources; any other runtime a one-line error saying shardguard needs Bun.
    expect(pkg.exports["."]).toEqual({
      types: "./runner/index.ts",
      bun: "./runner/index.ts",
      require: "./runner/not-bun.cjs",
      default: "./runner/not-bun.mjs",
    });
    expect(pkg.exports["./preset/preload.ts"]).toBe("./preset/preload.ts");
    expect(pkg.bin.shardguard).toBe("runner/cli-bin.ts");
    // npm runs `prepare` on install in a checkout and before `npm pack`: the compiled CLI is built,
    // or, without bun or the dependencies (`npm pack` of a fresh clone), the sources are shipped alone.
    expect(pkg.scripts.prepare).toStartWith(`${pkg.scripts.build} || `);
    expect(pkg.engines.bun).toBe(`>=${OLDEST_SUPPORTED_BUN}`);
  });
});

describe("installed from the tarball into a fresh project", () => {
  test("bun add -d <tarball> installs the package and its bin", () => {
    expect(install.code).toBe(0);
    expect(JSON.parse(readFileSync(path.join(project, "package.json"), "utf8")).devDependencies.shardguard).toBe(
      tarball,
    );
    expect(existsSync(path.join(project, "node_modules", "shardguard", "runner", "index.ts"))).toBe(true);
    expect(existsSync(path.join(project, "node_modules", "shardguard", "test"))).toBe(false);
    expect(existsSync(path.join(project, "node_modules", ".bin", "shardguard"))).toBe(true);
  });

  test("shardguard run, by the compiled CLI, which finds the child preload where the package was installed", () => {
    // The installer gives every file a new time; the compiled CLI still counts as built from these sources.
    const installed = path.join(project, "node_modules", "shardguard");
    expect(freshCompiledCli(installed)).toBe(path.join(installed, COMPILED_CLI));
    const r = run([path.join(project, "node_modules", ".bin", "shardguard"), "run", "test/math.test.ts"], project);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(report().summary.tests.passed).toBe(1);
    expect(report().shards[0]!.testSource).toBe("junit+events");
  });

  test("shardguard init --preset gstack-paid, then bun test --preset gstack-paid", () => {
    const init = run(
      [path.join(project, "node_modules", ".bin", "shardguard"), "init", "--preset", "gstack-paid"],
      project,
    );
    expect(init.code).toBe(0);
    // The installed form, resolved through the package's exports.
    expect(readFileSync(path.join(project, "bunfig.toml"), "utf8")).toBe(
      `[test]\npreload = ["shardguard/preset/preload.ts"]\n`,
    );
    expect(readFileSync(path.join(project, ".gitignore"), "utf8")).toBe(".shardguard/\n");
    expect(readFileSync(path.join(project, "test", "shardguard.gstack-paid.test.ts"), "utf8")).toContain(
      `from "shardguard/preset/entry.ts"`,
    );

    const paid = run(["bun", "test", "--preset", "gstack-paid"], project);
    expect(paid.code).toBe(0);
    const r = report();
    expect(r.preset?.name).toBe("gstack-paid");
    expect(r.shards.map((s) => s.files)).toEqual([["test/skill-e2e-demo.test.ts"]]);
    expect(r.summary.tests.passed).toBe(1);

    // Plain `bun test` still runs every file itself, the entry file's check included.
    const plain = run(["bun", "test"], project);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toContain("shardguard preset gstack-paid resolves");
  });

  test(
    "bun test --preset refused after its settings are valid " +
      "(preflight command fails): the earlier reports are removed",
    () => {
      const out = path.join(project, ".shardguard");
      expect(existsSync(path.join(out, "report.json"))).toBe(true);
      // The file's path contains the preset name, so Bun's filter lets the preload run.
      writeFileSync(
        path.join(project, "test", "broken-check.test.ts"),
        `import { test } from "bun:test";\ntest("never runs", () => {});\n`,
      );
      const bunfig = path.join(project, "bunfig.toml");
      const before = readFileSync(bunfig, "utf8");
      writeFileSync(
        bunfig,
        `${before}\n[shardguard.presets.broken]\nglobs = ` +
          `["test/broken-check.test.ts"]\n[shardguard.presets.broken.preflight]\ncommand = ["sh", "-c", "exit 4"]\n`,
      );
      try {
        const r = run(["bun", "test", "--preset", "broken"], project);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain("exited 4; no shard started");
        for (const f of ["junit.xml", "report.json", "ctrf.json"]) expect(existsSync(path.join(out, f))).toBe(false);
      } finally {
        writeFileSync(bunfig, before);
        rmSync(path.join(project, "test", "broken-check.test.ts"));
      }
      // The next run writes them again.
      expect(
        run([path.join(project, "node_modules", ".bin", "shardguard"), "run", "test/math.test.ts"], project).code,
      ).toBe(0);
    },
  );

  test('import { … } from "shardguard": run, render and validate', () => {
    writeFileSync(
      path.join(project, "api.ts"),
      [
        `import { main, executeRun, Run, RunReportSchema, renderJUnit, renderJson, renderCtrf, githubAnnotations, ` +
          `EXIT } from "shardguard";`,
        `import { readFileSync } from "node:fs";`,
        `const report = RunReportSchema.parse(JSON.parse(readFileSync(".shardguard/report.json", "utf8")));`,
        `const lines: string[] = [];`,
        `const code = await main(["list", "test/math.test.ts"], { env: process.env, cwd: process.cwd(), stdout: ` +
          `(t) => lines.push(t), stderr: (t) => lines.push(t), onSignal: () => {} });`,
        `console.log(JSON.stringify({`,
        `  main: typeof main, executeRun: typeof executeRun, Run: typeof Run, code, ok: EXIT.ok, listed: ` +
          `lines.join("\\n").includes("test/math.test.ts"),`,
        `  junit: renderJUnit(report).startsWith("<?xml"), json: JSON.parse(renderJson(report)).runId === ` +
          `report.runId,`,
        `  ctrf: JSON.parse(renderCtrf(report)).reportFormat, annotations: githubAnnotations(report, { repoRoot: ` +
          `process.cwd() }).length,`,
        `}));`,
        ``,
      ].join("\n"),
    );
    const r = run(["bun", "api.ts"], project);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({
      main: "function",
      executeRun: "function",
      Run: "function",
      code: 0,
      ok: 0,
      listed: true,
      junit: true,
      json: true,
      ctrf: "CTRF",
      annotations: 0,
    });
  });

  test(
    "docs/api.md's example, unchanged, prints what the page says; under Node the import is one line saying " +
      "shardguard needs Bun",
    () => {
      const { program, output } = apiExample();
      writeFileSync(path.join(project, "api-example.ts"), program);
      const r = run(["bun", "api-example.ts"], project);
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe(output);
      writeFileSync(path.join(project, "node-import.mjs"), `import { main } from "shardguard";\n`);
      const node = run(["node", "node-import.mjs"], project);
      expect(node.code).toBe(1);
      expect(node.stderr).toContain("Error: shardguard runs under Bun (1.3.0 or newer) only");
    },
  );
});

describe("a project made by bun init -y, with the tarball added", () => {
  test("tsc --noEmit (bun init's strict tsconfig) passes with the entry test init writes and docs/api.md's example", () => {
    const fresh = path.join(base, "fresh");
    mkdirSync(fresh);
    const init = run([process.execPath, "init", "-y"], fresh);
    expect(init.code).toBe(0);
    const tsconfig = readFileSync(path.join(fresh, "tsconfig.json"), "utf8");
    expect(tsconfig).toContain(`"strict": true`);
    expect(run([process.execPath, "add", "-d", tarball], fresh).code).toBe(0);
    const bin = path.join(fresh, "node_modules", ".bin", "shardguard");
    expect(run([bin, "init", "--preset", "gstack-paid"], fresh).code).toBe(0);
    const entry = path.join(fresh, "test", "shardguard.gstack-paid.test.ts");
    expect(readFileSync(entry, "utf8")).toContain(`from "shardguard/preset/entry.ts"`);
    writeFileSync(path.join(fresh, "api-example.ts"), apiExample().program);
    // Our TypeScript, not the one bun init pinned: the check does not move with the registry's newest.
    const tsc = path.join(REPO, "node_modules", "typescript", "bin", "tsc");
    const r = run(["node", tsc, "--noEmit", "-p", "."], fresh, 180_000);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  }, 300_000);
});
