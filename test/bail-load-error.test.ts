/**
 * --bail in a batched shard where a file fails to load: Bun stops there,
 * skips the preload's end-of-run hook and leaves the failing file (and all
 * after it) out of its JUnit, exiting 1. The files before it keep their
 * passes; only the failing file is a load-error; the later ones never started.
 */
import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";

afterAll(removeSuites);

const PASSING = (tag: string) =>
  `import { test } from "bun:test";\ntest("${tag} a", () => {});\ntest("${tag} b", () => {});\n`;
const BROKEN = 'import { test } from "bun:test";\nimport "./does-not-exist";\ntest("never", () => {});\n';

async function statuses(files: Record<string, string>): Promise<Record<string, string[]>> {
  const dir = makeSuite(files);
  const run = await runCli(["run", "--root", dir, "--files-per-shard", "5", "--timeout", "30", "--", "--bail"]);
  expect(run.code).toBe(1);
  const out: Record<string, string[]> = {};
  for (const t of readReport(dir).shards.flatMap((s) => s.tests)) (out[t.file] ??= []).push(`${t.name}: ${t.status}`);
  const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
  expect((await validateJUnitXml(xml)).errors).toEqual([]);
  return out;
}

test("a passing file before the one that fails to load keeps its passes; the file after it never started", async () => {
  expect(await statuses({ "a.test.ts": PASSING("a"), "b.test.ts": BROKEN, "c.test.ts": PASSING("c") })).toEqual({
    "a.test.ts": ["a a: passed", "a b: passed"],
    "b.test.ts": ["(whole file): failed"],
    "c.test.ts": ["(whole file): never-started"],
  });
}, 60_000);

test("the first file fails to load: the others never started, not failed with its error", async () => {
  expect(await statuses({ "a.test.ts": BROKEN, "b.test.ts": PASSING("b"), "c.test.ts": PASSING("c") })).toEqual({
    "a.test.ts": ["(whole file): failed"],
    "b.test.ts": ["(whole file): never-started"],
    "c.test.ts": ["(whole file): never-started"],
  });
}, 60_000);
