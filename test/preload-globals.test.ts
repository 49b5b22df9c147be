/**
 * The child preload's hooks (runner/child/shard-preload.ts) must neither hang
 * nor fail in test files that fake timers or break globals. Its waits must
 * end in files that fake or replace the timers: under `--bail` the preload waits
 * once before the first test, and a timer there never fired in a file that
 * calls `jest.useFakeTimers()` at load, so its first test failed after Bun's
 * 5 s hook timeout where plain `bun test --bail` passes. And its end-of-run
 * hook must not throw where a test broke `Symbol` or `Promise.withResolvers`
 * (it failed as an "afterAll hook" where plain `bun test` passes). Real CLI,
 * real `bun test` children, events on.
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
  const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "20", "--", "--bail"], {
    limitMs: 30_000,
  });
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

test("a file that breaks Symbol, Promise.withResolvers, " +
  "Promise.race and setTimeout passes, as with plain bun test", async () => {
  const dir = makeSuite({
    "breaks-globals.test.ts": `import { test } from "bun:test";
test("breaks them", () => {
  (Promise as any).withResolvers = undefined;
  (Promise as any).race = () => new Promise(() => {});
  (globalThis as any).setTimeout = undefined;
  (globalThis as any).Symbol = undefined;
});
test("after", () => {});
`,
  });
  const run = await runCli(["run", "--root", dir, "--timeout", "20"], { limitMs: 30_000 });
  expect(run.code).toBe(0);
  const [shard] = readReport(dir).shards;
  expect(shard!.status).toBe("passed");
  expect(shard!.tests.map((t) => [t.name, t.status])).toEqual([
    ["breaks them", "passed"],
    ["after", "passed"],
  ]);
  // The barrier cannot run in that child; the preload's wait for it is bounded (ACK_MAX_MS, 5 s).
  expect(shard!.durationMs).toBeLessThan(12_000);
}, 40_000);
