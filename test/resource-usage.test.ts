/**
 * What each shard's process tree cost (exec/resource-usage.ts), on real
 * runs: a shard whose grandchild burns a second of CPU shows that second in
 * its own figures and not in a sibling's, whether the grandchild stays in
 * the tree or escapes it (setsid) and is killed by the sweep; a shard killed
 * at its timeout still gets figures; both methods (a cgroup v2 group per
 * shard where the runner can make one, /proc sampling where it cannot,
 * forced here by pointing the runner at a directory that is no cgroup); the
 * shards' cgroups are gone after the run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmdirSync } from "node:fs";
import path from "node:path";
import { TEST_CGROUP_ENV } from "../runner/exec/cgroups.ts";
import type { ShardResult } from "../runner/results/report-model.ts";
import { makeTestCgroup } from "./helpers/test-cgroup.ts";
import { makeSuite, readReport, removeSuites, runCli, shardOf, waitFor } from "./helpers/cli.ts";
import { alive } from "./helpers/processes.ts";

/** A Bun program that spins until it has used 1 s of CPU (however loaded the machine), then runs `then`. */
const spinner = (then: string) =>
  `const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; }; while (cpu() < 1e6) {} ${then}`;

const FILES = (marker: string) => ({
  // The grandchild stays in the tree and exits; the test waits for it.
  "busy.test.ts":
    `import { test } from "bun:test";
test("a grandchild burns 1 s of CPU", async () => {
  const child = Bun.spawn([process.execPath, "-e", ${JSON.stringify(spinner(""))}], { stdio: ["ignore", "ignore", ` +
    `"ignore"] });
  await child.exited;
}, 120_000);
`,
  // A double fork: the spinner's parent exits at once, so it leaves the tree
  // (re-parented, in a session of its own) and spins on after the test
  // until the sweep kills it. Both run without Bun's no-orphans flag, which
  // every Bun below a shard inherits from its environment: with it the
  // parent would take the spinner down as it exits.
  "escapee.test.ts":
    `import { test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
const env = { ...process.env };
delete env.BUN_FEATURE_FLAG_NO_ORPHANS;
test("an escapee burns 1 s of CPU and spins on", async () => {
  const spin = ${JSON.stringify(spinner(`require("fs").writeFileSync(${JSON.stringify(marker)}, "1"); for (;;) {}`))};
  spawn(process.execPath, ["-e", "require('child_process').spawn(process.execPath, ['-e', process.argv[1]], { ` +
    `detached: true, stdio: 'ignore' }).unref()", spin], { stdio: "ignore", env });
  while (!existsSync(${JSON.stringify(marker)})) await Bun.sleep(20);
}, 120_000);
`,
  "idle.test.ts": `import { test } from "bun:test";
test("sleeps", async () => { await Bun.sleep(1000); });
`,
});

/** The cgroups under `dir` (its subdirectories; its files are the kernel's interface). */
const childGroups = (dir: string) =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);

const cpuMs = (shard: ShardResult) => (shard.resources?.cpuUserMs ?? NaN) + (shard.resources?.cpuSystemMs ?? NaN);

/** A cgroup v2 directory this process may make groups under (the runner would make the same), or null. */
const testCgroup = makeTestCgroup("sg-resource-test");

afterAll(() => {
  removeSuites();
  // Fails (EBUSY, ENOTEMPTY) when the runner left a group behind; the cgroup test checks that first.
  if (testCgroup !== null) rmdirSync(testCgroup);
});

/** A directory that is not a cgroup: the runner cannot make one there and samples /proc. */
let notCgroup = "";
beforeAll(() => {
  notCgroup = makeSuite({}, "sg-not-cgroup-");
});

const METHODS = [
  { method: "cgroup", env: () => ({ [TEST_CGROUP_ENV]: testCgroup! }), skip: testCgroup === null, floorMs: 900 },
  // Sampling misses up to one interval (250 ms) of a process that ends by itself.
  {
    method: "proc-sampling",
    env: () => ({ [TEST_CGROUP_ENV]: notCgroup }),
    skip: process.platform !== "linux",
    floorMs: 700,
  },
] as const;

describe.each(METHODS)("$method", ({ method, env, skip, floorMs }) => {
  test.skipIf(skip)(
    "a busy grandchild's CPU is its own shard's, in or out of the tree, not a sibling's",
    async () => {
      const marker = path.join(makeSuite({}, "sg-marker-"), "spun");
      const dir = makeSuite(FILES(marker));
      const run = await runCli(["run", "--root", dir, "--jobs", "3", "--timeout", "120"], {
        env: env(),
        limitMs: 150_000,
      });
      expect(run.code).toBe(0);
      const report = readReport(dir);
      const [busy, escapee, idle] = ["busy.test.ts", "escapee.test.ts", "idle.test.ts"].map((f) => shardOf(report, f));
      for (const shard of [busy!, escapee!, idle!]) {
        expect(shard.resources).toMatchObject({ method });
        expect(shard.resources!.precision.length).toBeGreaterThan(10);
        // Bun alone is over 10 MiB resident; every shard lived past the first sample.
        expect(shard.resources!.peakRssBytes).toBeGreaterThan(10 * 2 ** 20);
        expect(shard.resources!.wallMs).toBeGreaterThanOrEqual(shard.durationMs);
      }
      expect(cpuMs(busy!)).toBeGreaterThanOrEqual(floorMs);
      // Read as the sweep killed it (proc sampling), or counted by its cgroup.
      expect(escapee!.leftovers.some((e) => e.leftGroup)).toBe(true);
      expect(cpuMs(escapee!)).toBeGreaterThanOrEqual(900);
      // Bun's start and a 1 s sleep: far from a second of CPU.
      expect(cpuMs(idle!)).toBeLessThan(500);
      if (method === "cgroup") expect(childGroups(testCgroup!)).toEqual([]);
    },
    160_000,
  );

  test.skipIf(skip || method !== "cgroup")(
    "cgroup.kill ends a descendant that left the group and cleared its environment (no cookie to sweep)",
    async () => {
      const pidFile = path.join(makeSuite({}, "sg-marker-"), "cleared.pid");
      const dir = makeSuite({
        "cleared.test.ts":
          `import { test } from "bun:test";
import { existsSync } from "node:fs";
test("leaves a spinner without an environment", async () => {
  // Double fork: Bun's no-orphans kills its own children by pid, whatever their session.
  Bun.spawn(["sh", "-c", "setsid env -i sh -c 'echo $$ > ${pidFile}; while :; do :; done' &"], { stdio: ["ignore", ` +
          `"ignore", "ignore"] });
  while (!existsSync("${pidFile}")) await Bun.sleep(20);
  await Bun.sleep(50);
});
`,
      });
      const run = await runCli(["run", "--root", dir, "--timeout", "60"], { env: env(), limitMs: 90_000 });
      expect(run.code).toBe(0);
      const pid = Number(readFileSync(pidFile, "utf8"));
      const gone = await waitFor(() => !alive(pid), 2_000);
      if (!gone) process.kill(pid, "SIGKILL");
      expect(gone).toBe(true);
      expect(childGroups(testCgroup!)).toEqual([]);
      // What only the cgroup found is named among the shard's leftovers.
      const found = shardOf(readReport(dir), "cleared.test.ts").leftovers.filter((l) => l.pid === pid);
      expect(found).toEqual([{ pid, command: expect.stringContaining("while :"), leftGroup: true }]);
    },
    100_000,
  );

  test.skipIf(skip)(
    "a shard killed at its timeout still gets figures, shown on its end line",
    async () => {
      const dir = makeSuite({
        "spin.test.ts": `import { test } from "bun:test";\ntest("spins", () => { for (;;) {} });\n`,
      });
      const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "5", "--grace", "1"], {
        env: env(),
        limitMs: 60_000,
      });
      expect(run.code).toBe(1);
      const shard = shardOf(readReport(dir), "spin.test.ts");
      expect(shard.status).toBe("timed-out");
      expect(shard.resources).toMatchObject({ method });
      expect(shard.resources!.wallMs).toBeGreaterThanOrEqual(5_000);
      expect(cpuMs(shard)).toBeGreaterThan(200);
      // Slow (5 s or more): the end line names the cost.
      expect(run.stdout).toMatch(/\] TIMED-OUT .*spin\.test\.ts: .* \(cpu \d+(\.\d)? s, peak \d+ MiB\)\n/);
      if (method === "cgroup") expect(childGroups(testCgroup!)).toEqual([]);
    },
    70_000,
  );
});
