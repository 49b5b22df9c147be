/**
 * The runner itself dies (kill -9): its shards die with it (--no-orphans),
 * processes that left their shard's group die by the run's guardian, and the
 * reports already on disk are valid and list the unfinished shards.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { readReport, runCli, runIdOfRunner, survivors, waitFor, removeSuites } from "./helpers/cli.ts";
import { makeSuite } from "./helpers/cli.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";
import { alive } from "./helpers/processes.ts";
import { makeTestCgroup } from "./helpers/test-cgroup.ts";
import { removeCgroupTree, TEST_CGROUP_ENV } from "../runner/exec/cgroups.ts";

test("kill -9 of the runner mid-run: no shard process alive within 2 s, reports valid and honest", async () => {
  const slow = 'import { test } from "bun:test";\ntest("slow", async () => { await Bun.sleep(20_000); });\n';
  const dir = makeSuite({
    "a.test.ts": 'import { test } from "bun:test";\ntest("quick", () => {});\n',
    "b.test.ts": slow,
    "c.test.ts": slow,
    "d.test.ts": slow,
  });
  let killedAt = 0;
  const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "60"], {
    onLine: {
      match: /START c\.test\.ts/,
      // Killed once the reports on disk have a's verdict (interim writes are paced by their
      // own cost, so how soon that is depends on the machine), while b, c and d still run.
      act: (pid) =>
        void (async () => {
          const aPassed = () => {
            try {
              return readReport(dir).shards[0]?.status === "passed";
            } catch {
              return false;
            }
          };
          await waitFor(aPassed, 15_000);
          killedAt = performance.now();
          process.kill(pid, "SIGKILL");
        })(),
    },
  });
  expect(run.signal).toBe("SIGKILL");
  const report = readReport(dir);
  // Within 2 s of the kill, nothing carrying this run's cookie is alive.
  const clean = await waitFor(
    () => survivors(report.runId).length === 0,
    Math.max(0, 2_000 - (performance.now() - killedAt)),
  );
  expect(clean).toBe(true);

  expect(report.completed).toBe(false);
  expect(report.exitCode).toBeNull();
  expect(report.shards.map((s) => s.files[0])).toEqual(["a.test.ts", "b.test.ts", "c.test.ts", "d.test.ts"]);
  expect(report.shards[0]!.status).toBe("passed");
  const unfinished = report.shards.slice(1);
  for (const shard of unfinished) expect(shard.status).toBe("never-started");
  expect(unfinished.map((s) => s.reason)).toEqual([
    "still running when this report was written",
    "still running when this report was written",
    "queued: not started when this report was written",
  ]);
  const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
  expect((await validateJUnitXml(xml)).valid).toBe(true);
  expect(xml.match(/<testcase /g)?.length).toBe(4);
});

/** Pids of live guardian processes of a run (their command line names the run's cookie). */
function guardiansOf(runId: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (/\) [ZX] /.test(readFileSync(`/proc/${entry}/stat`, "utf8"))) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes("guardian-main.ts") && cmdline.includes(`\0${runId}:\0`)) found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/**
 * A test file whose one test starts `command` in the background through /bin/sh (Bun.spawn
 * with `spawnOptions` before `stdout`), writes its pid to `pidFile` beside itself, and waits 30 s.
 */
function grandchildTest(command: string, spawnOptions: string, pidFile: string): string {
  return [
    'import { test } from "bun:test";',
    'import { writeFileSync } from "node:fs";',
    'test("spawns", async () => {',
    `  const sh = Bun.spawn(["/bin/sh", "-c", ` +
      `${JSON.stringify(`${command} > /dev/null 2>&1 & echo $!`)}], { ${spawnOptions}stdout: "pipe" });`,
    "  const pid = (await new Response(sh.stdout).text()).trim();",
    "  await Bun.sleep(100);",
    `  writeFileSync(\`\${import.meta.dir}/${pidFile}\`, pid);`,
    "  await Bun.sleep(30_000);",
    "});",
    "",
  ].join("\n");
}

test("kill -9 of the runner while a shard has a setsid'd " +
  "grandchild: no process with the run's cookie alive 3 s later", async () => {
  const dir = makeSuite({
    "escape.test.ts":
      // A grandchild through a shell: Bun kills the processes it spawned itself when it exits.
      // Its runner pid is made to look alive (this test's own pid): other runs on the machine
      // sweep cookies whose runner is dead at their start, and must not do the guardian's job here.
      grandchildTest("SHARDGUARD_RUNNER_PID=$SG_TEST_PID setsid sleep 60", "", "escapee.pid"),
  });
  const pidFile = path.join(dir, "escapee.pid");
  let killedAt = 0;
  let guardians: number[] = [];
  let escapeeSid = 0;
  let runId = "";
  const run = await runCli(["run", "--root", dir, "--timeout", "60"], {
    env: { SG_TEST_PID: String(process.pid) },
    onLine: {
      match: /START escape\.test\.ts/,
      act: (pid) =>
        void waitFor(() => existsSync(pidFile), 10_000).then(() => {
          // From the shard child's cookie: report.json may not be written yet on a loaded machine.
          runId = runIdOfRunner(pid) ?? "";
          guardians = guardiansOf(runId);
          const stat = readFileSync(`/proc/${readFileSync(pidFile, "utf8").trim()}/stat`, "utf8");
          escapeeSid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
          killedAt = performance.now();
          process.kill(pid, "SIGKILL");
        }),
    },
  });
  expect(run.signal).toBe("SIGKILL");
  expect(runId).not.toBe("");
  const escapee = Number(readFileSync(pidFile, "utf8"));
  // The guardian was there, and the grandchild really left the group and the session.
  expect(guardians.length).toBe(1);
  expect(escapeeSid).toBe(escapee);
  const left = Math.max(0, 3_000 - (performance.now() - killedAt));
  const clean = await waitFor(() => survivors(runId).length === 0 && !alive(escapee), left);
  expect(survivors(runId)).toEqual([]);
  expect(alive(escapee)).toBe(false);
  expect(clean).toBe(true);
  // The guardian does its job and goes.
  expect(
    await waitFor(() => guardiansOf(runId).length === 0, Math.max(0, 3_000 - (performance.now() - killedAt))),
  ).toBe(true);
}, 60_000);

/**
 * Runs one shard whose test starts `command` through `/bin/sh` with an empty environment (no
 * cookie: an agent CLI run hermetically), SIGKILLs the runner once the grandchild's pid is
 * written, and returns that pid with whether it was gone within 3 s of the kill.
 */
async function killRunnerWithHermeticGrandchild(
  command: string,
  guardianToo = false,
  env: Record<string, string> = {},
): Promise<{ pid: number; goneIn3s: boolean; cgroups: boolean }> {
  const dir = makeSuite({
    "hermetic.test.ts": grandchildTest(command, "env: {}, ", "grandchild.pid"),
  });
  const pidFile = path.join(dir, "grandchild.pid");
  let killedAt = 0;
  let cgroups = false;
  const run = await runCli(["run", "--root", dir, "--timeout", "60"], {
    env,
    onLine: {
      match: /START hermetic\.test\.ts/,
      act: (pid) =>
        void waitFor(() => existsSync(pidFile), 10_000).then(() => {
          // The shard child (the runner's only child besides the guardian) is in
          // a shardguard cgroup when cgroups are in use.
          const child = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).map(Number);
          cgroups = child.some((c) => {
            try {
              return readFileSync(`/proc/${c}/cgroup`, "utf8").includes("/shardguard-");
            } catch {
              return false;
            }
          });
          if (guardianToo)
            for (const guardian of guardiansOf(runIdOfRunner(pid) ?? "")) process.kill(guardian, "SIGKILL");
          killedAt = performance.now();
          process.kill(pid, "SIGKILL");
        }),
    },
  });
  expect(run.signal).toBe("SIGKILL");
  const grandchild = Number(readFileSync(pidFile, "utf8"));
  if (guardianToo) return { pid: grandchild, goneIn3s: false, cgroups };
  const goneIn3s = await waitFor(() => !alive(grandchild), Math.max(0, 3_000 - (performance.now() - killedAt)));
  if (!goneIn3s) process.kill(grandchild, "SIGKILL");
  return { pid: grandchild, goneIn3s, cgroups };
}

test("kill -9 of the runner while a shard's grandchild has an empty " +
  "environment but stays in the shard's group: the guardian kills the group", async () => {
  const { goneIn3s } = await killRunnerWithHermeticGrandchild("/bin/sleep 60");
  expect(goneIn3s).toBe(true);
}, 60_000);

test("kill -9 of the runner while a shard's grandchild has an empty environment and " +
  "left the group: the guardian kills the shard's cgroup (where cgroups are in use)", async () => {
  const { goneIn3s, cgroups } = await killRunnerWithHermeticGrandchild("/usr/bin/setsid /bin/sleep 60");
  // Without a cgroup nothing can find such a process (docs/architecture.md, "Runner death").
  expect(goneIn3s).toBe(cgroups);
}, 60_000);

test("kill -9 of the runner and its guardian: the next run's stale-run " +
  "sweep kills what the dead run's shard cgroup still holds, cookie or not", async () => {
  // Shard cgroups under a parent of this test's own: any other run on the machine (a parallel test
  // file) sweeps dead runners' cgroups beside its own at its start, and would do this run's job first.
  const cgroup = makeTestCgroup("sg-stale-test");
  const env: Record<string, string> = cgroup ? { [TEST_CGROUP_ENV]: cgroup } : {};
  const { pid, cgroups } = await killRunnerWithHermeticGrandchild("/usr/bin/setsid /bin/sleep 60", true, env);
  try {
    expect(alive(pid)).toBe(true);
    const dir = makeSuite({ "a.test.ts": 'import { test } from "bun:test";\ntest("quick", () => {});\n' });
    const run = await runCli(["run", "--root", dir], { env });
    expect(run.code).toBe(0);
    // Without cgroups no sweep can find it (docs/architecture.md, "Runner death").
    expect(readReport(dir).sweeps.staleRuns.some((e) => e.pid === pid)).toBe(cgroups);
    expect(await waitFor(() => !alive(pid), 2_000)).toBe(cgroups);
  } finally {
    if (alive(pid)) process.kill(pid, "SIGKILL");
    if (cgroup) await waitFor(() => removeCgroupTree(cgroup), 2_000);
  }
}, 60_000);

test("a run that ends normally leaves no guardian behind", async () => {
  const dir = makeSuite({ "a.test.ts": 'import { test } from "bun:test";\ntest("quick", () => {});\n' });
  const run = await runCli(["run", "--root", dir, "--timeout", "60"]);
  expect(run.code).toBe(0);
  const runId = readReport(dir).runId;
  expect(guardiansOf(runId)).toEqual([]);
});

afterAll(removeSuites);
