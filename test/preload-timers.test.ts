/**
 * The child preload's waits (runner/child/shard-preload.ts) must end in test
 * files that fake or replace the timers: under `--bail` the preload waits
 * once before the first test, and a timer there never fired in a file that
 * calls `jest.useFakeTimers()` at load, so its first test failed after Bun's
 * 5 s hook timeout where plain `bun test --bail` passes. Real CLI, real
 * `bun test` children, events on.
 */
import { afterAll, expect, test } from "bun:test";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const FILES = {
  // Bun's own fake timers, installed before the first test (below the globals).
  "bun-fake.test.ts": `import { jest, test } from "bun:test";
jest.useFakeTimers();
test("first", () => {});
test("second", () => {});
`,
  // A library that swaps the globals (sinon-style), never restored.
  "swapped-globals.test.ts": `import { test } from "bun:test";
globalThis.setTimeout = (() => 0) as unknown as typeof setTimeout;
globalThis.setImmediate = (() => 0) as unknown as typeof setImmediate;
test("first", () => {});
test("second", () => {});
`,
};

test("under --bail, files with fake or swapped timers pass at once, as with plain bun test", async () => {
  const dir = makeSuite(FILES);
  // Bun's per-test hook timeout is 5 s; the wall-clock timeout is above it so a hang shows as a failed hook.
  const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "20", "--", "--bail"], { limitMs: 30_000 });
  expect(run.stderr + run.stdout).not.toContain("timed out");
  expect(run.code).toBe(0);
  const report = readReport(dir);
  for (const shard of report.shards) {
    expect(shard.status).toBe("passed");
    expect(shard.tests.map((t) => [t.name, t.status])).toEqual([
      ["first", "passed"],
      ["second", "passed"],
    ]);
    // The 5 s hook timeout did not fire.
    expect(shard.durationMs).toBeLessThan(4_000);
  }
  expect(report.shards.map((s) => s.files[0]).sort()).toEqual(Object.keys(FILES).sort());
}, 40_000);
