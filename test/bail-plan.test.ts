/**
 * Under `--bail`, Bun ends the run right after the first failure, without
 * the child preload's global afterAll (docs/bun-behaviour.md), so the
 * end-of-run barrier never runs. The tests Bun never reached are known only
 * from the inspector's `found` plan, sent while the file loads; the preload
 * holds each file's first test until the runner has it (the per-file
 * barriers of runner/events/inspector.ts). With a fixed 5 ms wait before the
 * first test instead, 1 or 2 of these 60 shards at six at a time lost the
 * plan (measured), and a batched shard's later files had no wait at all.
 */
import { afterAll, expect, test } from "bun:test";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

test("60 bailing one-file shards, six at a time: every shard keeps its unreached test as never-started", async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) {
    files[`t/b${String(i).padStart(2, "0")}.test.ts`] =
      `import { expect, test } from "bun:test";\ntest("ok", () => {});\n` +
      `test("bad", () => { expect(1).toBe(2); });\ntest("unreached", () => {});\n`;
  }
  const dir = makeSuite(files);
  const r = await runCli(["run", "--root", dir, "--jobs", "6", "t", "--", "--bail"], { limitMs: 120_000 });
  expect(r.code).toBe(1);
  const report = readReport(dir);
  expect(report.shards).toHaveLength(60);
  const statuses = report.shards.map((s) => s.tests.map((t) => `${t.name}=${t.status}`).join(" "));
  expect(statuses.filter((s) => s !== "ok=passed bad=failed unreached=never-started")).toEqual([]);
}, 120_000);

test("a batched shard under --bail: the file that bails " +
  "keeps its unreached test, the files after it never started", async () => {
  const files: Record<string, string> = {};
  const passing = `import { test } from "bun:test";\ntest("fine", () => {});\n`;
  for (let i = 0; i < 12; i++) {
    files[`t/b${String(i).padStart(2, "0")}.test.ts`] =
      i === 7
        ? `import { expect, test } from "bun:test";\ntest("ok", () => {});\n` +
          `test("bad", () => { expect(1).toBe(2); });\ntest("unreached", () => {});\n`
        : passing;
  }
  const dir = makeSuite(files);
  for (let round = 0; round < 3; round++) {
    const r = await runCli(["run", "--root", dir, "--files-per-shard", "12", "t", "--", "--bail"], { limitMs: 60_000 });
    expect(r.code).toBe(1);
    const tests = readReport(dir).shards[0]!.tests;
    expect(tests.filter((t) => t.file === "t/b07.test.ts").map((t) => `${t.name}=${t.status}`)).toEqual([
      "ok=passed",
      "bad=failed",
      "unreached=never-started",
    ]);
    for (const t of tests.filter((t) => t.file > "t/b07.test.ts")) expect(t.status).toBe("never-started");
  }
}, 120_000);
