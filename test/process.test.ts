/**
 * exec/process.ts on real processes: named lifecycle states, the group kill
 * sequence, spawn failure, escapee sweep. The log (the child's own stdout
 * and stderr, write errors) has its own file: test/shard-log.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startProcess, sweepCookie, type ProcessState } from "../runner/exec/process.ts";
import { makeSuite, removeSuites, waitFor } from "./helpers/cli.ts";
import { alive } from "./helpers/processes.ts";

const tmp = () => makeSuite({}, "sg-proc-");

test("a child that exits by itself: running → sweeping → finished, output spooled to the log", async () => {
  const states: ProcessState[] = [];
  const log = path.join(tmp(), "a.log");
  const proc = startProcess({
    argv: ["sh", "-c", "echo out; echo err >&2; exit 3"],
    cwd: os.tmpdir(),
    env: process.env,
    logPath: log,
    timeoutMs: 10_000,
    graceMs: 1_000,
    onState: (s) => states.push(s),
  });
  const outcome = await proc.done;
  expect(outcome).toMatchObject({
    exitCode: 3,
    signal: null,
    killedBy: null,
    escalated: false,
    spawnError: null,
    logError: null,
  });
  expect(states).toEqual(["running", "sweeping", "finished"]);
  expect(readFileSync(log, "utf8").split("\n").sort()).toEqual(["", "err", "out"]);
});

test(
  "at the deadline the whole group gets SIGTERM; one " + "that ignores it gets SIGKILL after the grace period",
  async () => {
    const states: ProcessState[] = [];
    const dir = tmp();
    // The shell ignores TERM and so does its grandchild; both must die.
    const script =
      `trap '' TERM; sh -c "trap '' TERM; echo $$ > ${dir}/gc.pid; while :; do sleep 0.05; done" & ` +
      `while :; do sleep 0.05; done`;
    const proc = startProcess({
      argv: ["sh", "-c", script],
      cwd: dir,
      env: process.env,
      logPath: path.join(dir, "b.log"),
      timeoutMs: 500,
      graceMs: 400,
      onState: (s) => states.push(s),
    });
    const t0 = performance.now();
    const outcome = await proc.done;
    const took = performance.now() - t0;
    expect(outcome).toMatchObject({ killedBy: "timeout", escalated: true, signal: "SIGKILL", exitCode: null });
    expect(states).toEqual(["running", "terminating", "killing", "sweeping", "finished"]);
    expect(took).toBeGreaterThanOrEqual(850);
    expect(took).toBeLessThan(2_500);
    const grandchild = Number(readFileSync(path.join(dir, "gc.pid"), "utf8"));
    expect(await waitFor(() => !alive(grandchild), 1_000)).toBe(true);
  },
);

test("a child that honours SIGTERM ends within the grace period, not escalated", async () => {
  const proc = startProcess({
    argv: ["sleep", "30"],
    cwd: os.tmpdir(),
    env: process.env,
    logPath: path.join(tmp(), "c.log"),
    timeoutMs: 300,
    graceMs: 5_000,
  });
  const outcome = await proc.done;
  expect(outcome).toMatchObject({ killedBy: "timeout", escalated: false, signal: "SIGTERM" });
  expect(outcome.durationMs).toBeLessThan(2_000);
});

test("a cancel that arrives before the spawn completes is applied once the child runs", async () => {
  const proc = startProcess({
    argv: ["sleep", "30"],
    cwd: os.tmpdir(),
    env: process.env,
    logPath: path.join(tmp(), "p.log"),
    timeoutMs: 60_000,
    graceMs: 5_000,
  });
  expect(proc.state).toBe("pending");
  proc.terminate("cancel");
  const outcome = await proc.done;
  expect(outcome).toMatchObject({ killedBy: "cancel", signal: "SIGTERM" });
  expect(outcome.durationMs).toBeLessThan(2_000);
});

test("a command that cannot be spawned is spawn-failed, with the OS error", async () => {
  const states: ProcessState[] = [];
  const proc = startProcess({
    argv: ["/nonexistent/sg-binary"],
    cwd: os.tmpdir(),
    env: process.env,
    logPath: path.join(tmp(), "d.log"),
    timeoutMs: 1_000,
    graceMs: 100,
    onState: (s) => states.push(s),
  });
  const outcome = await proc.done;
  expect(outcome.spawnError).toMatch(/ENOENT/);
  expect(outcome.pid).toBeNull();
  expect(states).toEqual(["spawn-failed"]);
});

test("a descendant that left the group (setsid) is swept by its cookie", async () => {
  const cookie = `SHARDGUARD_RUN=sweep-test-${process.pid}:1`;
  const dir = tmp();
  const proc = startProcess({
    argv: ["sh", "-c", `setsid sh -c 'echo $$ > ${dir}/escapee.pid; exec sleep 30' > /dev/null 2>&1 & sleep 0.2`],
    cwd: dir,
    // A live runner pid (this test process), so that another run's stale-run
    // sweep on the same machine never takes the escapee for an orphan.
    env: { ...process.env, SHARDGUARD_RUN: cookie.split("=")[1], SHARDGUARD_RUNNER_PID: String(process.pid) },
    logPath: path.join(dir, "e.log"),
    timeoutMs: 5_000,
    graceMs: 100,
    cookie,
  });
  const outcome = await proc.done;
  const escapee = Number(readFileSync(path.join(dir, "escapee.pid"), "utf8"));
  expect(outcome.leftovers.map((e) => e.pid)).toContain(escapee);
  expect(outcome.leftovers.find((e) => e.pid === escapee)!.command).toContain("sleep 30");
  expect(outcome.leftovers.find((e) => e.pid === escapee)!.leftGroup).toBe(true);
  // SIGKILL is delivered at once, but the process needs a moment to die.
  expect(await waitFor(() => !alive(escapee), 1_000)).toBe(true);
  expect(sweepCookie(cookie, "exact")).toEqual([]);
});

afterAll(removeSuites);
