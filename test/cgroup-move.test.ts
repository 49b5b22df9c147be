/**
 * The move of a shard child into its cgroup (exec/resource-usage.ts) runs
 * on the thread pool, so the child preload joins the group itself when it
 * starts first; a child gone before the move keeps the shard's cgroup
 * figures with a reason, and does not give cgroups up for the run. Real
 * `bun test` children, real cgroup v2 groups; skipped where this process
 * cannot make one.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SHARD_ENV, SHARD_PRELOAD } from "../runner/exec/bun-command.ts";
import { TEST_CGROUP_ENV } from "../runner/exec/cgroups.ts";
import { makeTestCgroup } from "./helpers/test-cgroup.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";

/** A cgroup v2 directory this process may make groups under, or null. */
const testCgroup = makeTestCgroup("sg-move-test");

afterAll(() => {
  removeSuites();
  if (testCgroup !== null) rmdirSync(testCgroup);
});

/** The `0::` line of a cgroup file's text, without its prefix. */
const unifiedPath = (text: string) =>
  text
    .split("\n")
    .find((l) => l.startsWith("0::"))
    ?.slice(3) ?? "";

/**
 * Runs `bun test` on a probe that records its own cgroup before anything else, with the shard preload and `env`;
 * returns what it recorded.
 */
function probeCgroup(env: Record<string, string>): string {
  const out = path.join(makeSuite({}, "sg-probe-out-"), "cgroup.txt");
  const dir = makeSuite({
    "probe.test.ts": `import { test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(out)}, readFileSync("/proc/self/cgroup", "utf8"));
test("probe", () => {});
`,
  });
  const run = spawnSync(process.execPath, ["test", "--preload", SHARD_PRELOAD, "./probe.test.ts"], {
    cwd: dir,
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(run.status).toBe(0);
  return readFileSync(out, "utf8");
}

describe.skipIf(testCgroup === null)("cgroup move", () => {
  test("the child preload joins the group named in its environment before the test file loads, and only then", () => {
    const group = path.join(testCgroup!, "shard-probe");
    mkdirSync(group);
    try {
      const joined = unifiedPath(probeCgroup({ [SHARD_ENV.cgroup]: group }));
      expect(joined.length).toBeGreaterThan(1);
      expect(group.endsWith(joined)).toBe(true);
      // Without the variable the child stays where it was born (the runner's own group).
      const stayed = unifiedPath(probeCgroup({}));
      expect(stayed).toBe(unifiedPath(readFileSync("/proc/self/cgroup", "utf8")));
      expect(group.endsWith(stayed)).toBe(false);
    } finally {
      rmdirSync(group);
    }
  }, 120_000);

  test("a child gone before its move keeps cgroup figures " +
    "with the reason, and the next shard still gets a cgroup", async () => {
    // The meter reads the runner's cgroup from this variable on first use (exec/cgroups.ts).
    process.env[TEST_CGROUP_ENV] = testCgroup!;
    const { startMeter } = await import("../runner/exec/resource-usage.ts");
    const gone = spawn("true", [], { stdio: "ignore" });
    await new Promise((resolve) => gone.once("exit", resolve));
    // Reaped: the pid names no process now.
    const early = startMeter();
    early.attach(gone.pid!);
    const figures = await early.finish(() => 1);
    expect(figures.method).toBe("cgroup");
    expect(figures.precision).toContain("ended before the runner moved it");

    const marker = path.join(makeSuite({}, "sg-move-marker-"), "go");
    const live = spawn(
      process.execPath,
      [
        "-e",
        `const f = ${JSON.stringify(marker)}; const fs = require("fs"); while (!fs.existsSync(f)) Bun.sleepSync(5);`,
      ],
      { stdio: "ignore" },
    );
    const next = startMeter();
    next.attach(live.pid!);
    // The move lands on the thread pool; then the group holds the child.
    let inGroup = false;
    for (let i = 0; i < 400 && !inGroup; i++) {
      inGroup = unifiedPath(readFileSync(`/proc/${live.pid}/cgroup`, "utf8")).includes(`/shardguard-${process.pid}/`);
      if (!inGroup) await Bun.sleep(5);
    }
    expect(inGroup).toBe(true);
    writeFileSync(marker, "");
    await new Promise((resolve) => live.once("exit", resolve));
    const after = await next.finish(() => 1);
    expect(after.method).toBe("cgroup");
    expect(after.precision).not.toContain("before the runner moved it");
    expect((after.cpuUserMs ?? 0) + (after.cpuSystemMs ?? 0)).toBeGreaterThan(0);
  }, 60_000);
});
