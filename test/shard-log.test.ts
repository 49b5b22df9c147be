/**
 * A shard's log is the child's own stdout and stderr (exec/process.ts): one
 * O_APPEND descriptor of the log file, which the runner closes after the
 * spawn and never reads. Real `bun test` children: output complete on a
 * normal exit, on process.exit and on a group kill; a grandchild holding
 * the log open does not hold the shard; write errors (file size limit, full
 * disk, a log that cannot be opened) mark the log incomplete.
 */
import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import path from "node:path";
import { startProcess } from "../runner/exec/process.ts";
import { makeSuite, removeSuites, REPO, waitFor } from "./helpers/cli.ts";
import { alive } from "./helpers/processes.ts";

const BUN = process.execPath;

/** 4 MiB through process.stdout.write, 2,000 console.log lines, 2,000 console.error lines. */
const PRINTS =
  'import { test } from "bun:test";\n' +
  'test("prints", () => {\n' +
  '  const chunk = ("x".repeat(1023) + "\\n").repeat(1024);\n' +
  "  for (let i = 0; i < 4; i++) process.stdout.write(chunk);\n" +
  '  for (let i = 0; i < 2000; i++) { console.log("out-" + i); console.error("err-" + i); }\n' +
  '  process.stdout.write("last-line\\n");\n' +
  "  if (process.env.SG_EXIT_NOW) process.exit(0);\n" +
  "});\n";

function expectEveryLine(log: string): void {
  const lines = log.split("\n");
  expect(lines.filter((l) => l.length === 1023 && /^x+$/.test(l)).length).toBe(4096);
  const out = new Set(lines.filter((l) => l.startsWith("out-")));
  const err = new Set(lines.filter((l) => l.startsWith("err-")));
  expect(out.size).toBe(2000);
  expect(err.size).toBe(2000);
  expect(lines).toContain("last-line");
}

for (const exitNow of [false, true]) {
  test(
    `stdout and stderr of a bun test child are all in the log (mode 0600) ` +
      `${exitNow ? "after process.exit(0)" : "on a normal exit"}`,
    async () => {
      const dir = makeSuite({ "prints.test.ts": PRINTS }, "sg-log-");
      const logPath = path.join(dir, "shard.log");
      const proc = startProcess({
        argv: [BUN, "test", path.join(dir, "prints.test.ts")],
        cwd: dir,
        env: { ...process.env, SG_EXIT_NOW: exitNow ? "1" : "" },
        logPath,
        timeoutMs: 30_000,
        graceMs: 1_000,
      });
      // The runner holds one descriptor of the log while the child runs (to put back a log a
      // test deleted, exec/log-check.ts), and none once the outcome is known.
      const ours = () =>
        readdirSync("/proc/self/fd").filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`) === logPath;
          } catch {
            return false;
          }
        });
      expect(ours()).toHaveLength(1);
      const outcome = await proc.done;
      expect(ours()).toEqual([]);
      expect(outcome).toMatchObject({ exitCode: 0, signal: null, logError: null });
      const log = readFileSync(logPath, "utf8");
      expectEveryLine(log);
      if (!exitNow) expect(log).toContain("1 pass");
      expect(outcome.logBytes).toBe(statSync(logPath).size);
      expect(statSync(logPath).mode & 0o777).toBe(0o600);
    },
  );
}

test("output written before a group kill is all in the log", async () => {
  const dir = makeSuite(
    {
      "spins.test.ts":
        'import { test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n' +
        'test("spins", () => {\n' +
        '  for (let i = 0; i < 5000; i++) { console.log("out-" + i); console.error("err-" + i); }\n' +
        '  writeFileSync(process.env.SG_WROTE!, "1");\n' +
        "  while (true) {}\n});\n",
    },
    "sg-log-",
  );
  const logPath = path.join(dir, "shard.log");
  const wrote = path.join(dir, "wrote");
  // SIGTERM then SIGKILL of the group while the test spins.
  const proc = startProcess({
    argv: [BUN, "test", path.join(dir, "spins.test.ts")],
    cwd: dir,
    env: { ...process.env, SG_WROTE: wrote },
    logPath,
    timeoutMs: 3_000,
    graceMs: 200,
  });
  const outcome = await proc.done;
  expect(existsSync(wrote)).toBe(true);
  expect(outcome.killedBy).toBe("timeout");
  expect(outcome.signal === "SIGKILL" || outcome.signal === "SIGTERM").toBe(true);
  const lines = readFileSync(logPath, "utf8").split("\n");
  expect(new Set(lines.filter((l) => l.startsWith("out-"))).size).toBe(5000);
  expect(new Set(lines.filter((l) => l.startsWith("err-"))).size).toBe(5000);
  expect(outcome.logError).toBeNull();
});

/** A test whose grandchild leaves the group (setsid) holding the log, and writes to it late. */
const ESCAPES =
  'import { test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n' +
  'test("escapes", () => {\n' +
  ('  const p = Bun.spawn(["setsid", "sh", "-c", "echo $$ > \\"$SG_PID\\"; sleep 0.5; echo late-line; exec sleep ' +
    '30"], { stdout: "inherit", stderr: "inherit" });\n') +
  "  p.unref();\n" +
  '  while (!require("node:fs").existsSync(process.env.SG_PID!)) Bun.sleepSync(5);\n' +
  '  console.log("test-done");\n});\n';

test(
  "a grandchild that left the group holding the log does " + "not delay the shard's end, and later writes still land",
  async () => {
    const dir = makeSuite({ "escapes.test.ts": ESCAPES }, "sg-log-");
    const logPath = path.join(dir, "shard.log");
    const pidFile = path.join(dir, "gc.pid");
    // No cookie: nothing sweeps this escapee, so it holds the log for 30 s.
    const proc = startProcess({
      argv: [BUN, "test", path.join(dir, "escapes.test.ts")],
      cwd: dir,
      env: { ...process.env, SG_PID: pidFile },
      logPath,
      timeoutMs: 20_000,
      graceMs: 500,
    });
    const t0 = performance.now();
    const outcome = await proc.done;
    const took = performance.now() - t0;
    const grandchild = Number(readFileSync(pidFile, "utf8"));
    try {
      expect(outcome.exitCode).toBe(0);
      expect(alive(grandchild)).toBe(true);
      expect(readlinkSync(`/proc/${grandchild}/fd/1`)).toBe(logPath);
      // Exit to outcome without waiting for the descriptor's last holder (30 s
      // away); the pipes of old waited up to 500 ms here.
      expect(took - outcome.durationMs).toBeLessThan(250);
      expect(readFileSync(logPath, "utf8")).toContain("test-done");
      expect(await waitFor(() => readFileSync(logPath, "utf8").includes("late-line"), 3_000)).toBe(true);
    } finally {
      process.kill(grandchild, "SIGKILL");
    }
  },
);

test("the same grandchild with the shard's cookie is found and killed by the sweep", async () => {
  const dir = makeSuite({ "escapes.test.ts": ESCAPES }, "sg-log-");
  const pidFile = path.join(dir, "gc.pid");
  const value = `log-sweep-${process.pid}:1`;
  const proc = startProcess({
    argv: [BUN, "test", path.join(dir, "escapes.test.ts")],
    cwd: dir,
    env: { ...process.env, SG_PID: pidFile, SHARDGUARD_RUN: value, SHARDGUARD_RUNNER_PID: String(process.pid) },
    logPath: path.join(dir, "shard.log"),
    timeoutMs: 20_000,
    graceMs: 500,
    cookie: `SHARDGUARD_RUN=${value}`,
  });
  const outcome = await proc.done;
  const grandchild = Number(readFileSync(pidFile, "utf8"));
  expect(outcome.leftovers.find((e) => e.pid === grandchild)?.leftGroup).toBe(true);
  expect(await waitFor(() => !alive(grandchild), 1_000)).toBe(true);
});

/**
 * Runs `startProcess` in a Bun process of its own (the shell line `wrap`
 * makes of the command: limits, a mount), on a bun test child printing 2 MiB with
 * console.log; returns the outcome and the log's size.
 */
function outcomeUnder(
  wrap: (command: string) => string,
  logDir: string,
): { exitCode: number | null; signal: string | null; logError: string | null; logBytes: number; size: number } {
  const dir = makeSuite(
    {
      "fills.test.ts":
        'import { test } from "bun:test";\nconst line = "y".repeat(1023);\ntest("fills", () => { for (let i = 0; ' +
        "i < 2048; i++) console.log(line); });\n",
      "supervise.ts":
        `import { statSync } from "node:fs";\nimport { startProcess } from ` +
        `${JSON.stringify(path.join(REPO, "runner", "exec", "process.ts"))};\n` +
        "const [logPath, file] = process.argv.slice(2);\n" +
        ('const o = await startProcess({ argv: [process.execPath, "test", file!], cwd: import.meta.dir, env: ' +
          "process.env, logPath: logPath!, timeoutMs: 20_000, graceMs: 500 }).done;\n") +
        "console.log(JSON.stringify({ exitCode: o.exitCode, signal: o.signal, logError: o.logError, logBytes: " +
        "o.logBytes, size: statSync(logPath!).size }));\n",
    },
    "sg-log-",
  );
  const run = spawnSync(
    "sh",
    ["-c", wrap(`exec "${BUN}" "${dir}/supervise.ts" "${logDir}/shard.log" "${dir}/fills.test.ts"`)],
    { encoding: "utf8", timeout: 30_000 },
  );
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout.trim().split("\n").pop()!);
}

test(
  "a log that reaches the file size limit (RLIMIT_FSIZE) " + "is marked incomplete; the outcome is still the child's",
  () => {
    const logDir = makeSuite({}, "sg-log-");
    // 1024 blocks of 512 or 1024 bytes, by shell: under the 2 MiB printed either way.
    const o = outcomeUnder((command) => `ulimit -f 1024 && ${command}`, logDir);
    expect(o.exitCode).toBe(0);
    expect(o.size).toBeLessThan(2 * 1024 * 1024);
    expect(o.logError).toMatch(/EFBIG: the log reached the file size limit/);
  },
);

/** True where this user may mount a tmpfs in a namespace of its own. */
const canMountTmpfs =
  spawnSync("unshare", ["-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /tmp"], { timeout: 5_000 }).status === 0;

test.skipIf(!canMountTmpfs)(
  "a log on a full disk (a 256 KiB tmpfs) is marked incomplete (ENOSPC); the outcome is still the child's",
  () => {
    const logDir = makeSuite({}, "sg-log-");
    const o = outcomeUnder(
      (command) => `exec unshare -rm sh -c 'mount -t tmpfs -o size=256k tmpfs "${logDir}" && ${command}'`,
      logDir,
    );
    expect(o.exitCode).toBe(0);
    expect(o.size).toBe(256 * 1024);
    expect(o.logError).toMatch(/ENOSPC: no space left/);
  },
);

test(
  "a log that cannot be opened: the child still runs " + "(output to /dev/null) and the log is marked incomplete",
  async () => {
    const outcome = await startProcess({
      argv: ["sh", "-c", "echo out; exit 4"],
      cwd: "/",
      env: process.env,
      logPath: path.join(makeSuite({}, "sg-log-"), "no-such-dir", "x.log"),
      timeoutMs: 5_000,
      graceMs: 100,
    }).done;
    expect(outcome.exitCode).toBe(4);
    expect(outcome.logError).toMatch(/ENOENT/);
  },
);

afterAll(removeSuites);
