/**
 * The compiled CLI (runner/cli/compiled.ts): `shardguard` runs the bundle
 * with Bun's bytecode only while it was built from the sources as they are,
 * and it decides exactly what the sources decide. Its start-up time is
 * measured by bench/perf.ts, not here.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildCompiledCli, COMPILED_CLI, freshCompiledCli, sourcesFingerprint } from "../runner/cli/compiled.ts";
import { fixtureFiles, makeSuite, readReport, removeSuites, REPO, runCli, tempDir } from "./helpers/cli.ts";

afterAll(removeSuites);

/** A package tree: runner/ sources, package.json, and a compiled CLI with its bytecode and stamp. */
function tree(): string {
  const root = tempDir("sg-compiled-");
  mkdirSync(path.join(root, "runner", "cli"), { recursive: true });
  mkdirSync(path.join(root, "dist"));
  writeFileSync(path.join(root, "package.json"), '{ "name": "shardguard" }\n');
  writeFileSync(path.join(root, "runner", "cli-entry.ts"), "export {};\n");
  writeFileSync(path.join(root, "runner", "cli", "main.ts"), "export const a = 1;\n");
  // Imported as text and inlined, as report.html's script and style sheet are.
  writeFileSync(path.join(root, "runner", "cli", "page.client.js"), "1;\n");
  writeFileSync(path.join(root, "runner", "cli", "page.css"), "a {}\n");
  writeFileSync(path.join(root, "runner", "cli", "notes.md"), "not a source\n");
  writeFileSync(path.join(root, COMPILED_CLI), "// bundle\n");
  writeFileSync(path.join(root, `${COMPILED_CLI}.jsc`), "bytecode");
  writeFileSync(path.join(root, `${COMPILED_CLI}.sources`), `${sourcesFingerprint(root)}\n`);
  return root;
}

describe("which CLI `shardguard` runs", () => {
  test("the compiled one while the sources are those it was built from", () => {
    const root = tree();
    expect(freshCompiledCli(root)).toBe(path.join(root, COMPILED_CLI));
    // Only the sources under runner/ (.ts, and the page's .js and .css) and package.json count.
    writeFileSync(path.join(root, "runner", "cli", "notes.md"), "changed\n");
    expect(freshCompiledCli(root)).toBe(path.join(root, COMPILED_CLI));
  });

  test.each([
    [
      "a source edited (same size)",
      (root: string) => writeFileSync(path.join(root, "runner", "cli", "main.ts"), "export const a = 2;\n"),
    ],
    ["a source added", (root: string) => writeFileSync(path.join(root, "runner", "cli", "extra.ts"), "export {};\n")],
    [
      "the page's script edited",
      (root: string) => {
        writeFileSync(path.join(root, "runner", "cli", "page.client.js"), "2;\n");
      },
    ],
    [
      "the page's style sheet edited",
      (root: string) => {
        writeFileSync(path.join(root, "runner", "cli", "page.css"), "b {}\n");
      },
    ],
    [
      "a source renamed",
      (root: string) => {
        rmSync(path.join(root, "runner", "cli", "main.ts"));
        writeFileSync(path.join(root, "runner", "cli", "main2.ts"), "export const a = 1;\n");
      },
    ],
    [
      "package.json changed",
      (root: string) => writeFileSync(path.join(root, "package.json"), '{ "name": "shardguard", "version": "2" }\n'),
    ],
    ["the bytecode missing", (root: string) => rmSync(path.join(root, `${COMPILED_CLI}.jsc`))],
    ["the stamp missing", (root: string) => rmSync(path.join(root, `${COMPILED_CLI}.sources`))],
    ["the compiled CLI missing", (root: string) => rmSync(path.join(root, COMPILED_CLI))],
  ])("the sources when %s", (_label, change) => {
    const root = tree();
    change(root);
    expect(freshCompiledCli(root)).toBeNull();
  });
});

describe("the compiled CLI of this checkout", () => {
  test("names no path of the machine that built it (it ships in the tarball)", async () => {
    const compiled = freshCompiledCli(REPO) ?? (await buildCompiledCli(REPO));
    const text = readFileSync(compiled, "utf8");
    expect(text).toContain("__shardguardBundleUrl");
    expect(text.includes(REPO)).toBe(false);
  }, 60_000);

  test("decides what the sources decide: a pass, a failure " +
    "and a killed spinning file, with events, leftovers swept", async () => {
    const compiled = freshCompiledCli(REPO) ?? (await buildCompiledCli(REPO));
    expect(freshCompiledCli(REPO)).toBe(compiled);
    const files = fixtureFiles("pass", "fail", "spin", "grandchild");
    const statuses = async (entry: string | undefined) => {
      const dir = makeSuite(files);
      const r = await runCli(["run", "--root", dir, "--jobs", "4", "--timeout", "3", "--grace", "1"], { entry });
      expect(r.code).toBe(1);
      const report = readReport(dir);
      return {
        shards: report.shards.map((s) => [s.files.join(), s.status, s.testSource, s.leftovers.length > 0]).sort(),
        tests: report.shards.flatMap((s) => s.tests.map((t) => [t.file, t.name, t.status])).sort(),
      };
    };
    const fromCompiled = await statuses(compiled);
    expect(fromCompiled).toEqual(await statuses(undefined));
    // The bin launcher takes the same compiled CLI.
    expect(await statuses(path.join(REPO, "runner", "cli-bin.ts"))).toEqual(fromCompiled);
    // Events came through: the child preload was found from the compiled CLI's place.
    expect(fromCompiled.shards.map((s) => s[2])).toContain("junit+events");
  }, 60_000);
});
