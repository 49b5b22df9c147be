/**
 * The layering of runner/ and preset/ (docs/architecture.md, "Layers"): each
 * folder's DEPS.txt names what it may import; no file imports upward and no
 * import cycle exists, type imports included.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { checkLayers, codeLines, functionSizes } from "./helpers/layers.ts";
import { tempDir } from "./helpers/cli.ts";

const repo = path.resolve(import.meta.dir, "..");

describe("layers", () => {
  test("the checker finds an upward import and a cycle made of type imports", () => {
    const dir = tempDir("sg-layers-");
    try {
      const put = (rel: string, text: string) => {
        mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
        writeFileSync(path.join(dir, rel), text);
      };
      put("src/low/DEPS.txt", "# low imports nothing\n");
      put("src/high/DEPS.txt", "src/low\n");
      put("src/high/a.ts", 'import { b } from "../low/b.ts";\nexport const a = b;\n');
      // Upward: low may not import high, even for a type.
      put("src/low/b.ts", 'import type { T } from "../high/t.ts";\nexport const b: T = 1;\n');
      put("src/high/t.ts", 'export type T = number;\nexport type { U } from "./u.ts";\n');
      put("src/high/u.ts", 'import type { T } from "./t.ts";\nexport type U = T;\n');
      const report = checkLayers(dir, ["src"]);
      expect(report.violations).toEqual([
        "src/low/b.ts imports src/high/t.ts: src/low/DEPS.txt does not allow src/high",
      ]);
      expect(report.cycles).toEqual([["src/high/t.ts", "src/high/u.ts"]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("runner/ and preset/ import only downward, with no cycle", () => {
    const report = checkLayers(repo, ["runner", "preset"]);
    expect(report.files.length).toBeGreaterThan(30);
    expect(report.violations).toEqual([]);
    expect(report.cycles).toEqual([]);
  });

  test("the code-line count leaves out comments and blank lines, not strings that look like them", () => {
    const text = [
      "/** a",
      " * doc */",
      "const a = 1; // trailing",
      "",
      "// alone",
      'const b = "// not a comment";',
      "const c = `x",
      "/* inside */ y`;",
    ].join("\n");
    expect(codeLines("t.ts", text)).toBe(4);
  });

  test("the function-size count takes every body, nested ones inside their parent's", () => {
    const text = [
      "function outer() {",
      "  const f = () => {",
      "    return 1;",
      "  };",
      "  // note",
      "  return f();",
      "}",
    ].join("\n");
    const sizes = functionSizes("t.ts", text).map((s) => [s.name, s.codeLines]);
    expect(sizes).toEqual([
      ["outer", 6],
      ["(anonymous)", 3],
    ]);
  });

  test("no function or method body in runner/ or preset/ has over 80 lines of code", () => {
    const report = checkLayers(repo, ["runner", "preset"]);
    const long = report.files.flatMap((f) =>
      functionSizes(f, readFileSync(path.join(repo, f), "utf8"))
        .filter((s) => s.codeLines > 80)
        .map((s) => `${f}:${s.line} ${s.name} (${s.codeLines})`),
    );
    expect(long).toEqual([]);
  });

  test("comment lines are at most 20% of runner/'s non-blank lines (comments say why in a line or two)", () => {
    const report = checkLayers(repo, ["runner"]);
    let nonBlank = 0;
    let code = 0;
    for (const f of report.files) {
      const text = readFileSync(path.join(repo, f), "utf8");
      nonBlank += text.split("\n").filter((line) => line.trim() !== "").length;
      code += codeLines(f, text);
    }
    expect((nonBlank - code) / nonBlank).toBeLessThanOrEqual(0.2);
  });

  test("no source file has over 400 lines of code (comments and blank lines not counted)", () => {
    const report = checkLayers(repo, ["runner", "preset"]);
    const long = report.files
      .map((f) => ({ f, lines: codeLines(f, readFileSync(path.join(repo, f), "utf8")) }))
      .filter((x) => x.lines > 400);
    expect(long).toEqual([]);
  });
});

describe("shared test helpers", () => {
  /** The test/ files whose code (comments left out) matches `pattern`. */
  const filesUsing = (pattern: RegExp): string[] =>
    [...new Bun.Glob("test/**/*.ts").scanSync({ cwd: repo })]
      .filter((f) => !f.startsWith("test/fixtures/"))
      .filter((f) => pattern.test(readFileSync(path.join(repo, f), "utf8").replace(/^\s*(\/\/|\*).*$/gm, "")))
      .sort();

  test.each([
    ["temp dirs", /\bmkdtempSync\(/, ["test/helpers/cli.ts"]],
    ["alive(pid)", /function alive\(/, ["test/helpers/processes.ts"]],
    ["JUnit XML parsing", /new XMLParser\(/, ["test/helpers/junit-xml.ts"]],
  ])("%s have one helper", (_what, pattern, owners) => {
    expect(filesUsing(pattern)).toEqual(owners);
  });
});

test("exported type names in runner/ and preset/ are unique and say what they hold", () => {
  const owners = new Map<string, string[]>();
  for (const f of new Bun.Glob("{runner,preset}/**/*.ts").scanSync({ cwd: repo })) {
    const text = readFileSync(path.join(repo, f), "utf8");
    for (const m of text.matchAll(/^export (?:type|interface) (\w+)/gm))
      owners.set(m[1]!, [...(owners.get(m[1]!) ?? []), f]);
  }
  expect([...owners].filter(([, files]) => files.length > 1)).toEqual([]);
  const vague = ["Base", "Out", "Cap", "Data", "Info", "Thing", "Stuff", "RunRunner"];
  expect(vague.filter((name) => owners.has(name))).toEqual([]);
  expect(owners.size).toBeGreaterThan(50);
});
