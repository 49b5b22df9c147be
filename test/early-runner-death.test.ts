/**
 * A runner that dies before its first report write (issue 33, item 1): the
 * stable report paths must then hold nothing, or this run's own snapshot,
 * never an earlier run's green reports (a JUnit publisher running "always"
 * would show them as this run). `--last-failed` and `merge` must agree.
 */
import { afterAll, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CLI, makeSuite, readReport, REPO, removeSuites, runCli, withoutCiVariables } from "./helpers/cli.ts";
import { threeReports } from "./helpers/three-reports.ts";

afterAll(removeSuites);

const STABLE = ["junit.xml", "report.json", "ctrf.json", "report.html"];

/**
 * Two files; each SIGKILLs its parent when SG_KILL_PARENT=1 (a shard child's
 * parent is the runner: it spawns `bun test` itself), and sleeps when SG_SLOW=1.
 */
function suite(): string {
  const file = (name: string) =>
    [
      'import { test } from "bun:test";',
      `test("${name}", async () => {`,
      '  if (process.env.SG_KILL_PARENT === "1") process.kill(process.ppid, "SIGKILL");',
      '  if (process.env.SG_SLOW === "1") await Bun.sleep(5_000);',
      "});",
      "",
    ].join("\n");
  return makeSuite({ "a.test.ts": file("a"), "b.test.ts": file("b") });
}

/** The stable files of `out` and their text. */
function stableFiles(out: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of STABLE) {
    const file = path.join(out, name);
    if (existsSync(file)) files.set(name, readFileSync(file, "utf8"));
  }
  return files;
}

/**
 * What a run killed once its child existed may leave at the stable paths:
 * nothing that an earlier run wrote (`before`), and any report there is
 * `runId`'s own unfinished snapshot, the same in all three formats.
 */
async function expectNoEarlierReports(dir: string, out: string, before: Map<string, string>, runId: string) {
  const after = stableFiles(out);
  for (const [name, text] of after) expect({ name, same: text === before.get(name) }).toEqual({ name, same: false });
  if (after.has("report.json")) {
    const report = readReport(dir);
    expect(report.runId).toBe(runId);
    expect(report.completed).toBe(false);
    expect(report.exitCode).toBeNull();
  }
  if (after.has("ctrf.json")) expect(JSON.parse(after.get("ctrf.json")!).results.extra.runId).toBe(runId);
  if (after.has("report.html")) expect(after.get("report.html")).toContain(`<title>shardguard report ${runId}</title>`);
  if (after.has("junit.xml") && after.has("report.json") && after.has("ctrf.json")) {
    const shown = await threeReports(dir);
    expect(shown.junit.map((t) => t.status)).not.toEqual(["passed", "passed"]);
  }
}

/** The run directory under `out/runs` that is not in `known`; null when the runner died before making one. */
function newRunDir(out: string, known: readonly string[]): string | null {
  const names = existsSync(path.join(out, "runs")) ? readdirSync(path.join(out, "runs")) : [];
  return names.find((n) => !known.includes(n)) ?? null;
}

test("a test SIGKILLs its parent, the runner, after a green run: no earlier report; --last-failed agrees", async () => {
  const dir = suite();
  const out = path.join(dir, ".shardguard");
  const green = await runCli(["run", "--root", dir, "--jobs", "2"]);
  expect(green.code).toBe(0);
  const greenId = readReport(dir).runId;
  const before = stableFiles(out);
  expect([...before.keys()]).toEqual(STABLE);

  const killed = await runCli(["run", "--root", dir, "--jobs", "2"], { env: { SG_KILL_PARENT: "1" } });
  expect(killed.signal).toBe("SIGKILL");
  const runId = newRunDir(out, [greenId]);
  expect(runId).not.toBeNull();
  await expectNoEarlierReports(dir, out, before, runId!);

  // --last-failed reads the newest run: it never calls the green run this one.
  const rerun = await runCli(["run", "--root", dir, "--last-failed"]);
  expect(rerun.stdout + rerun.stderr).not.toContain(`every planned file passed in run ${greenId}`);
  if (existsSync(path.join(out, "runs", runId!, "report.json"))) expect(readReport(dir).rerunOf?.runId).toBe(runId!);
  else {
    expect(rerun.code).toBe(2);
    expect(rerun.stderr).toContain(`--last-failed: run ${runId} left no report`);
  }
}, 60_000);

test("a slice's runner SIGKILLed by its test after a green slice: merge does not count the earlier run", async () => {
  const dir = suite();
  const outs = [path.join(dir, "o1"), path.join(dir, "o2")];
  const slice = (i: number) => ["run", "--root", dir, "--out", outs[i]!, "--shard", `${i + 1}/2`];
  for (const i of [0, 1]) expect((await runCli(slice(i))).code).toBe(0);
  const killed = await runCli(slice(0), { env: { SG_KILL_PARENT: "1" } });
  expect(killed.signal).toBe("SIGKILL");
  const merged = path.join(dir, "merged");
  const merge = await runCli(["merge", ...outs, "--out", merged]);
  expect(merge.code).toBe(1);
  const report = readReport(dir, path.join(merged, "report.json"));
  expect(report.summary.tests.passed).toBe(1);
  expect(report.shards.flatMap((s) => s.tests).filter((t) => t.status !== "passed")).toHaveLength(1);
}, 60_000);

/** The pids of the children of `pid` (every thread's, Linux /proc). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** True when `pid`'s command line is a `bun test` shard child (not the guardian). */
function isShardChild(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("test");
  } catch {
    return false;
  }
}

/**
 * Starts the CLI on `dir` (slow tests) and SIGKILLs it `delayMs` after the
 * spawn, or as soon as its first shard child shows in /proc (`"first-child"`).
 * @returns whether a shard child of the run existed when it was killed
 */
async function killRunAt(dir: string, at: number | "first-child"): Promise<boolean> {
  const child = spawn(process.execPath, [CLI, "run", "--root", dir, "--jobs", "2"], {
    cwd: REPO,
    env: { ...withoutCiVariables(process.env), NO_COLOR: "1", SG_SLOW: "1" },
    stdio: "ignore",
  });
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  const t0 = performance.now();
  let seen = false;
  for (;;) {
    seen ||= childrenOf(child.pid!).some(isShardChild);
    if (at === "first-child" ? seen : performance.now() - t0 >= at) break;
    if (performance.now() - t0 > 20_000) throw new Error("no shard child within 20 s");
    await Bun.sleep(2);
  }
  child.kill("SIGKILL");
  await closed;
  return seen;
}

test.skipIf(process.platform !== "linux")(
  "kill -9 of the runner from outside at several instants after a green run: no earlier report once a child existed",
  async () => {
    const dir = suite();
    const out = path.join(dir, ".shardguard");
    let withChild = 0;
    for (const at of ["first-child", 100, 200, 300, 450, 600] as const) {
      const green = await runCli(["run", "--root", dir, "--jobs", "2"]);
      expect(green.code).toBe(0);
      const known = readdirSync(path.join(out, "runs"));
      const before = stableFiles(out);
      const childExisted = await killRunAt(dir, at);
      if (at === "first-child") expect(childExisted).toBe(true);
      if (!childExisted) continue;
      withChild += 1;
      const runId = newRunDir(out, known);
      expect(runId).not.toBeNull();
      await expectNoEarlierReports(dir, out, before, runId!);
    }
    // On a machine too loaded to spawn within 0.6 s only the first case checks anything.
    expect(withChild).toBeGreaterThanOrEqual(1);
  },
  120_000,
);

test.skipIf(process.platform !== "linux")(
  "kill -9 of the runner while a preset's preflight command runs (before any shard): the earlier reports are gone",
  async () => {
    const dir = suite();
    writeFileSync(
      path.join(dir, "bunfig.toml"),
      [
        "[shardguard.presets.slow]",
        'globs = ["*.test.ts"]',
        "[shardguard.presets.slow.preflight]",
        'command = ["sleep", "30"]',
        "",
      ].join("\n"),
    );
    const out = path.join(dir, ".shardguard");
    expect((await runCli(["run", "--root", dir])).code).toBe(0);
    expect([...stableFiles(out).keys()]).toEqual(STABLE);
    const child = spawn(process.execPath, [CLI, "run", "--root", dir, "--preset", "slow"], {
      cwd: REPO,
      env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
      stdio: "ignore",
    });
    const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
    const isSleep = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8") === "sleep\u000030\u0000";
      } catch {
        return false;
      }
    };
    let sleeper: number | undefined;
    const t0 = performance.now();
    while (sleeper === undefined && performance.now() - t0 < 20_000) {
      sleeper = childrenOf(child.pid!).find(isSleep);
      await Bun.sleep(5);
    }
    child.kill("SIGKILL");
    await closed;
    if (sleeper !== undefined) process.kill(sleeper, "SIGKILL");
    expect(sleeper).toBeDefined();
    expect([...stableFiles(out).keys()]).toEqual([]);
  },
  60_000,
);
