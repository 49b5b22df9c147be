/**
 * docs/api.md is the API's manual: its example runs as written (a real
 * `bun` process, real shards) and prints what the page says, every export
 * of runner/index.ts is described there, and any runtime other than Bun is
 * told in one line that shardguard needs Bun (package.json "exports").
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import path from "node:path";
import * as api from "../runner/index.ts";
import { apiExample } from "./helpers/api-doc.ts";
import { makeSuite, removeSuites, REPO, withoutCiVariables } from "./helpers/cli.ts";

afterAll(removeSuites);

const DOC = readFileSync(path.join(REPO, "docs", "api.md"), "utf8");

describe("docs/api.md", () => {
  test("the example runs under bun, importing shardguard through " +
    "the package's exports, and prints the documented output", () => {
    const { program, output } = apiExample();
    // A project whose node_modules/shardguard is this checkout: the import resolves as it does when installed.
    const dir = makeSuite(
      { "example.ts": program, "package.json": '{ "name": "api-example", "type": "module" }\n' },
      "sg-api-",
    );
    mkdirSync(path.join(dir, "node_modules"));
    symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"));
    const r = spawnSync(process.execPath, ["example.ts"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
      timeout: 60_000,
    });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(output);
    expect(r.status).toBe(0);
  }, 90_000);

  test("describes every export of runner/index.ts", () => {
    const missing = Object.keys(api).filter((name) => !DOC.includes(`\`${name}`));
    expect(missing).toEqual([]);
  });

  test("names no function the package does not export", () => {
    const named = [...DOC.matchAll(/^\| `(\w+)\(/gm), ...DOC.matchAll(/^\| `\w+\([^`]*`, `(\w+)\(/gm)].map(
      (m) => m[1]!,
    );
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((name) => !(name in api))).toEqual([]);
  });
});

describe("outside Bun", () => {
  test("the stub that package.json sends other runtimes to has runner/index.ts's export names", () => {
    const stub = readFileSync(path.join(REPO, "runner", "not-bun.mjs"), "utf8");
    const names = /export const \{([^}]+)\} = \{\};/
      .exec(stub)?.[1]
      ?.split(",")
      .map((name) => name.trim())
      .filter(Boolean)
      .sort();
    expect(names).toEqual(Object.keys(api).sort());
  });

  const node = Bun.which("node");
  test.skipIf(node === null)("import and require under Node end in one error saying shardguard runs under Bun", () => {
    const dir = makeSuite(
      {
        "a.mjs": `import { main } from "shardguard";\nconsole.log(typeof main);\n`,
        "b.cjs": `require("shardguard");\n`,
      },
      "sg-node-",
    );
    mkdirSync(path.join(dir, "node_modules"));
    symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"));
    for (const file of ["a.mjs", "b.cjs"]) {
      const r = spawnSync(node!, [file], { cwd: dir, encoding: "utf8", timeout: 30_000 });
      expect(r.status).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(/^Error: shardguard runs under Bun \(1\.3\.0 or newer\) only: .* \(this is node v\d+/m);
      expect(r.stderr).not.toContain("ERR_UNKNOWN_FILE_EXTENSION");
    }
  });

  test("the stub's line matches engines.bun", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8"));
    expect(pkg.engines.bun).toBe(`>=${api.MIN_BUN_VERSION}`);
    expect(readFileSync(path.join(REPO, "runner", "not-bun.txt"), "utf8")).toContain(
      `Bun (${api.MIN_BUN_VERSION} or newer)`,
    );
  });
});
