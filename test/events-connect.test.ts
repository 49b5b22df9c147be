/**
 * Test events through Bun's connect mode (`BUN_INSPECT_CONNECT_TO`,
 * runner/exec/bun-command.ts `inspectorEnv`), through the real CLI on real
 * children: what a test observes is what plain `bun test` shows
 * (docs/bun-behaviour.md, "What the inspector changes"), and a `bun` that a
 * test starts itself, which inherits the variable through Bun.spawn's
 * default environment, neither feeds nor disturbs the shard's events.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli, shardOf } from "./helpers/cli.ts";

afterAll(removeSuites);

/** A test file a shard's test runs as its own `bun test` grandchild (outside the planned pattern `t`). */
const INNER =
  `import { expect, test } from "bun:test";\n` +
  `const handle = (v: unknown) => v;\n` +
  `const handler = (context: unknown) => { const ctx = context; return handle(ctx); };\n` +
  `test("inner sees plain source text", () => {\n` +
  `  console.log("INNER " + JSON.stringify({ src: handler.toString(), execArgv: process.execArgv }));\n` +
  `  expect(handler.toString()).not.toContain("const ctx");\n` +
  `});\n`;

const OUTER =
  `import { expect, test } from "bun:test";\n` +
  `import path from "node:path";\n` +
  `test("runs a bun test of its own", async () => {\n` +
  `  const inner = path.join(import.meta.dir, "..", "inner", "inner.spec-only.ts");\n` +
  `  const child = Bun.spawn([process.execPath, "test", inner], { stdout: "pipe", stderr: "pipe" });\n` +
  `  const out = (await new Response(child.stdout).text()) + (await new Response(child.stderr).text());\n` +
  `  console.log(out);\n` +
  `  expect(await child.exited).toBe(0);\n` +
  `});\n` +
  `test("fails after it", () => expect(1).toBe(2));\n`;

describe("a test that starts its own bun test (it inherits BUN_INSPECT_CONNECT_TO)", () => {
  test("the grandchild runs as plain bun test, the shard " +
    "keeps its own events only, and no warning is printed", async () => {
    const dir = makeSuite({ "t/outer.test.ts": OUTER, "inner/inner.spec-only.ts": INNER });
    const r = await runCli(["run", "--root", dir, "--jobs", "1", "t"], { limitMs: 30_000 });
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain("WARNING");
    const shard = shardOf(readReport(dir), "t/outer.test.ts");
    expect(shard.testSource).toBe("junit+events");
    expect(shard.tests.map((t) => [t.name, t.status])).toEqual([
      ["runs a bun test of its own", "passed"],
      ["fails after it", "failed"],
    ]);
    const log = readFileSync(shard.logPath!, "utf8");
    const inner = JSON.parse(
      log
        .split("\n")
        .find((l) => l.startsWith("INNER "))!
        .slice("INNER ".length),
    ) as { src: string; execArgv: string[] };
    expect(inner.src).toContain("return handle(context)");
    expect(inner.execArgv).toEqual([]);
    // The shard's journal holds the outer file's events, none of the grandchild's.
    const journal = readFileSync(shard.logPath!.replace(/\.log$/, ".events.jsonl"), "utf8");
    expect(journal).toContain("fails after it");
    expect(journal).not.toContain("inner sees plain source text");
    expect(path.isAbsolute(shard.logPath!)).toBe(true);
  }, 30_000);
});
