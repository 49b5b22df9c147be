/**
 * Old runs under OUT/runs are pruned beyond KEEP_RUNS, never the current run
 * nor one touched in the last 6 hours; a run prunes while its shards run
 * (engine/run-dirs.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync, utimesSync } from "node:fs";
import path from "node:path";
import { KEEP_RUNS, pruneRuns } from "../runner/engine/run-dirs.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

/** Makes OUT/runs/<name> for each name, the old ones last touched a day ago. */
function seedRuns(out: string, old: string[], young: string[]): void {
  const dayAgo = new Date(Date.now() - 24 * 60 * 60 * 1000);
  for (const name of [...old, ...young]) mkdirSync(path.join(out, "runs", name, "logs"), { recursive: true });
  for (const name of old) utimesSync(path.join(out, "runs", name), dayAgo, dayAgo);
}

const names = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, "0")}`);

test("pruneRuns keeps the newest runs, the current one and young ones; never rejects", async () => {
  const out = path.join(makeSuite({}), "out");
  const old = names("2026-old-", 12);
  seedRuns(out, old, ["2025-young"]);
  mkdirSync(path.join(out, "runs", "2024-current"));
  await pruneRuns(out, "2024-current");
  const left = readdirSync(path.join(out, "runs")).sort();
  // The KEEP_RUNS - 1 newest others stay with the current run; the young one is never removed.
  expect(left).toEqual(["2024-current", "2025-young", ...old.slice(-(KEEP_RUNS - 1))].sort());
  await pruneRuns(path.join(out, "missing"), "x");
});

test("a run prunes old runs while it runs", async () => {
  const dir = makeSuite({ "a.test.ts": 'import { test } from "bun:test";\ntest("a", () => {});\n' });
  const out = path.join(dir, ".shardguard");
  const old = names("2000", 12);
  seedRuns(out, old, []);
  const run = await runCli(["run", "--root", dir, "--jobs", "1"]);
  expect(run.code).toBe(0);
  const report = readReport(dir);
  expect(readdirSync(path.join(out, "runs")).sort()).toEqual([...old.slice(-(KEEP_RUNS - 1)), report.runId].sort());
});
