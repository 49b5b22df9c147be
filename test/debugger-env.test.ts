/**
 * A run started where a debugger is configured (an editor's debug terminal
 * exports BUN_INSPECT and BUN_INSPECT_NOTIFY to every process): plain
 * `bun test` passes there, and so must the run. Inherited, those variables
 * made every shard child listen at the address the runner itself already
 * listens at, so each file failed before any test registered
 * (exec/bun-command.ts DEBUGGER_ENV).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { DEBUGGER_ENV, inspectorEnv } from "../runner/exec/bun-command.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

/**
 * A suite shaped like a project's: a describe with an each-table, and a
 * test that records what the child's environment held.
 */
function suite(): string {
  return makeSuite({
    "env.test.ts":
      'import { describe, expect, test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n' +
      'describe("checkout", () => {\n' +
      '  test.each([[1, 2], [2, 4]])("doubles %i", (a, b) => expect(a * 2).toBe(b));\n' +
      '  test("sees its environment", () => {\n' +
      '    const seen = ["BUN_INSPECT", "BUN_INSPECT_NOTIFY"].map((n) ' +
      '=> `${n}=${process.env[n] ?? "(unset)"}`).join("\\n");\n' +
      "    writeFileSync(`${import.meta.dir}/seen.txt`, seen);\n" +
      "  });\n});\n",
    "plain.test.ts": 'import { expect, test } from "bun:test";\ntest("plain", () => expect(1 + 1).toBe(2));\n',
  });
}

/**
 * An editor's debugger settings: a socket in the suite, so nothing else on the
 * machine is touched; nobody attaches, so nothing waits.
 */
const debuggerEnv = (dir: string) => ({
  BUN_INSPECT: `ws+unix://${path.join(dir, "debugger.sock")}`,
  BUN_INSPECT_NOTIFY: `unix://${path.join(dir, "notify.sock")}`,
});

describe("a run whose environment names a debugger (BUN_INSPECT, BUN_INSPECT_NOTIFY)", () => {
  test("plain bun test passes there: the baseline the run must match", () => {
    const dir = suite();
    const plain = spawnSync(process.execPath, ["test"], {
      cwd: dir,
      env: { ...process.env, ...debuggerEnv(dir) },
      encoding: "utf8",
    });
    expect(plain.stderr).toContain("4 pass");
    expect(plain.status).toBe(0);
  });

  for (const events of [true, false]) {
    test(`events ${events ? "on" : "off"}: every test passes, the ` +
      `children run without the variables, and one note says so`, async () => {
      const dir = suite();
      const run = await runCli(
        ["run", "--root", dir, "--jobs", "2", "--timeout", "30", ...(events ? [] : ["--no-test-events"])],
        { env: debuggerEnv(dir) },
      );
      expect(run.code).toBe(0);
      const report = readReport(dir);
      expect(report.shards.map((s) => s.status)).toEqual(["passed", "passed"]);
      expect(report.shards.flatMap((s) => s.tests.map((t) => t.status))).toEqual([
        "passed",
        "passed",
        "passed",
        "passed",
      ]);
      expect(readFileSync(path.join(dir, "seen.txt"), "utf8")).toBe("BUN_INSPECT=(unset)\nBUN_INSPECT_NOTIFY=(unset)");
      const notes = run.stdout
        .split("\n")
        .filter((line) => line.startsWith("shardguard: note: BUN_INSPECT and BUN_INSPECT_NOTIFY are set"));
      expect(notes).toHaveLength(1);
    }, 60_000);
  }

  test("the run's guardian is alive while its shards run", async () => {
    // The shard's test looks for its run's guardian (runner/exec/guardian-main.ts, started with the run id) in /proc.
    const probe =
      'import { expect, test } from "bun:test";\n' +
      'import { readdirSync, readFileSync, writeFileSync } from "node:fs";\n' +
      'test("finds the guardian", () => {\n' +
      '  const runId = process.env.SHARDGUARD_RUN!.split(":")[0]!;\n' +
      '  const alive = readdirSync("/proc").filter((p) => /^\\d+$/.test(p)).some((p) => {\n' +
      '    try { const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8"); return ' +
      'cmd.includes("guardian-main.ts") && cmd.includes(runId); } catch { return false; }\n' +
      "  });\n" +
      '  writeFileSync(`${import.meta.dir}/guardian.txt`, alive ? "alive" : "none");\n' +
      "});\n";
    const dir = makeSuite({ "guardian.test.ts": probe });
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "30"], { env: debuggerEnv(dir) });
    expect(run.code).toBe(0);
    expect(readFileSync(path.join(dir, "guardian.txt"), "utf8")).toBe("alive");
  }, 60_000);

  test("bg --local: the detached run starts and passes", async () => {
    const dir = suite();
    spawnSync("git", ["init", "-q"], { cwd: dir });
    const started = await runCli(["bg", "--local", "--jobs", "2"], { cwd: dir, env: debuggerEnv(dir) });
    expect(started.code).toBe(0);
    const followed = await runCli(["status", "--follow"], { cwd: dir, limitMs: 60_000 });
    expect(followed.stdout).toContain("passed (exit 0)");
    expect(followed.code).toBe(0);
  }, 90_000);

  test("a preset's touchfiles module loads: its loader is a Bun process of its own", () => {
    const repo = path.join(import.meta.dir, "..");
    const dir = makeSuite({
      "touchfiles.ts":
        'export const E2E_TOUCHFILES = { checkout: ["src/cart/**"] };\n' +
        'export const GLOBAL_TOUCHFILES: string[] = [];\nexport const E2E_TIERS = { checkout: "gate" };\n',
      "load.ts":
        `import { loadTouchfiles } from ${JSON.stringify(path.join(repo, "runner/presets/diff.ts"))};\n` +
        `import { getPreset, loadPresets } from ${JSON.stringify(path.join(repo, "runner/presets/resolve.ts"))};\n` +
        'const spec = getPreset(loadPresets(process.cwd()), "gstack-paid").selection!;\n' +
        'const data = await loadTouchfiles(process.cwd(), { ...spec, touchfiles: "touchfiles.ts" });\n' +
        "console.log(JSON.stringify(data?.map));\n",
    });
    // This process listens at the debugger's address, as a runner started in a debug terminal does.
    const loaded = spawnSync(process.execPath, [path.join(dir, "load.ts")], {
      cwd: dir,
      env: { ...process.env, ...debuggerEnv(dir) },
      encoding: "utf8",
    });
    expect(loaded.stderr).not.toContain("Failed to start inspector");
    expect(loaded.stdout.trim()).toBe('{"checkout":["src/cart/**"]}');
    expect(loaded.status).toBe(0);
  });

  test("a run without them prints no note", async () => {
    const dir = makeSuite({ "plain.test.ts": 'import { test } from "bun:test";\ntest("plain", () => {});\n' });
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "30"], {
      env: { BUN_INSPECT: undefined, BUN_INSPECT_NOTIFY: undefined },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("shardguard: note: BUN_INSPECT");
  });
});

describe("inspectorEnv", () => {
  test(
    "clears the debugger variables with events on and off, " + "and sets the runner's own socket only with events on",
    () => {
      for (const socket of ["/tmp/x/events.sock", null]) {
        const env = inspectorEnv(socket);
        for (const name of DEBUGGER_ENV) {
          expect(Object.hasOwn(env, name)).toBe(true);
          expect(env[name]).toBeUndefined();
        }
        expect(env.BUN_INSPECT_CONNECT_TO).toBe(socket ? `unix://${socket}` : undefined);
      }
    },
  );
});
