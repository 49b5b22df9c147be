/**
 * exec/shard-attempt.ts on real `bun test` children: the states an attempt
 * passes through, in order, as its hooks see them; the one "slot free"
 * call; and the run's handshake gate (exec/handshake-gate.ts), which counts
 * an attempt with events from its start until its handshake ends and never
 * keeps one that ended without it (the run's first report and every later
 * verdict wait on it). Whole runs cover the rest (test/events-fallback.test.ts,
 * test/pool.test.ts, test/hostile.test.ts).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { socketDirFor, socketPathFor } from "../runner/events/socket-dir.ts";
import { HandshakeGate } from "../runner/exec/handshake-gate.ts";
import type { ShardProcess } from "../runner/exec/process.ts";
import { ShardAttempt } from "../runner/exec/shard-attempt.ts";
import { shardPaths, type ShardContext, type ShardHooks } from "../runner/exec/shard-context.ts";
import type { PlannedShard } from "../runner/plan/plan.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";

afterAll(removeSuites);

const FILE = `import { expect, test } from "bun:test";\ntest("one", () => expect(1).toBe(1));\ntest("two", () => expect(1).toBe(2));\n`;

/** A suite of one file, the run's directories, and a context with events on. */
function setUp(): { ctx: ShardContext; shard: PlannedShard; gate: HandshakeGate } {
  const root = makeSuite({ "t/a.test.ts": FILE }, "sg-attempt-");
  const runDir = path.join(root, ".sg", "runs", "r1");
  const logDir = path.join(runDir, "logs");
  const junitDir = path.join(runDir, "junit");
  mkdirSync(logDir, { recursive: true });
  mkdirSync(junitDir, { recursive: true });
  const gate = new HandshakeGate();
  const ctx: ShardContext = {
    runId: "r1",
    root,
    bun: process.execPath,
    bunArgs: [],
    timeoutMs: 60_000,
    graceMs: 1_000,
    logDir,
    junitDir,
    socketDir: socketDirFor(runDir),
    env: { ...process.env, NO_COLOR: "1" },
    handshakes: gate,
  };
  return { ctx, shard: { index: 1, slug: "t-a", files: ["t/a.test.ts"] }, gate };
}

/** Whether `promise` has settled after the current macrotask. */
async function settledYet(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** Hooks that record, in order, what they were told and the attempt's state then. */
function recorder(attempt: () => ShardAttempt) {
  const seen: string[] = [];
  const live = new Set<ShardProcess>();
  const hooks: ShardHooks = {
    onStart: () => seen.push(`start ${attempt().state}`),
    onWarning: (_, message) => seen.push(`warning ${message}`),
    register: (proc) => {
      live.add(proc);
      seen.push(`register ${attempt().state}`);
      return () => {
        live.delete(proc);
        seen.push(`unregister ${proc.state}`);
      };
    },
    onSlotFree: () => seen.push(`slot free ${attempt().state}`),
  };
  return { seen, live, hooks };
}

describe("a shard attempt", () => {
  test(
    "with events: forward through its states, the slot freed once with the group gone, the gate held until the " +
      "handshake",
    async () => {
      const { ctx, shard, gate } = setUp();
      let attempt: ShardAttempt | null = null;
      const { seen, live, hooks } = recorder(() => attempt!);
      attempt = new ShardAttempt({
        ctx,
        shard,
        paths: shardPaths(ctx, shard),
        withEvents: true,
        hooks,
        cancelled: () => null,
      });
      expect(attempt.state).toBe("preparing");
      const ending = attempt.run();
      // Counted from its start, before the child exists.
      const waiting = gate.settled(60_000);
      expect(await settledYet(waiting)).toBe(false);
      await waiting;
      expect(["tests-running", "child-exited", "group-gone", "evidence-collected"]).toContain(attempt.state);
      const end = await ending;
      expect(seen).toEqual(["register spawned", "start spawned", "unregister finished", "slot free group-gone"]);
      expect(attempt.state).toBe("evidence-collected");
      expect(live.size).toBe(0);
      if (end.kind !== "ran") throw new Error(`stopped: ${end.problem}`);
      const { record } = end;
      expect([record.outcome.exitCode, record.outcome.killedBy]).toEqual([1, null]);
      expect(record.events?.tests.map((t) => [t.name, t.status])).toEqual([
        ["one", "passed"],
        ["two", "failed"],
      ]);
      expect([record.marks.testsStarted, record.marks.finishedNormally, record.flushed, record.requestProblem]).toEqual(
        [2, true, true, null],
      );
      expect(record.failedEnds).toBe(1);
    },
  );

  test("without events: no channel, running from the spawn, nothing enters the gate", async () => {
    const { ctx, shard, gate } = setUp();
    let attempt: ShardAttempt | null = null;
    const { seen, hooks } = recorder(() => attempt!);
    attempt = new ShardAttempt({
      ctx,
      shard,
      paths: shardPaths(ctx, shard),
      withEvents: false,
      hooks,
      cancelled: () => null,
    });
    const ending = attempt.run();
    expect(await settledYet(gate.settled(60_000))).toBe(true);
    const end = await ending;
    expect(seen).toEqual(["register spawned", "start spawned", "unregister finished", "slot free group-gone"]);
    if (end.kind !== "ran") throw new Error("stopped");
    expect([end.record.events, end.record.outcome.exitCode, end.record.marks.testsStarted]).toEqual([null, 1, 2]);
  });

  test("cancelled before the spawn: stopped, nothing spawned or registered, no slot freed, the gate left", async () => {
    const { ctx, shard, gate } = setUp();
    let attempt: ShardAttempt | null = null;
    const { seen, hooks } = recorder(() => attempt!);
    attempt = new ShardAttempt({
      ctx,
      shard,
      paths: shardPaths(ctx, shard),
      withEvents: true,
      hooks,
      cancelled: () => "SIGINT",
    });
    expect(await attempt.run()).toEqual({ kind: "stopped", problem: null });
    expect([attempt.state, seen]).toEqual(["stopped", []]);
    expect(await settledYet(gate.settled(60_000))).toBe(true);
  });

  test("a channel that cannot listen: stopped with why, before any spawn, the gate left", async () => {
    const { ctx, shard, gate } = setUp();
    let attempt: ShardAttempt | null = null;
    const { seen, hooks } = recorder(() => attempt!);
    attempt = new ShardAttempt({
      ctx,
      shard,
      paths: shardPaths(ctx, shard),
      withEvents: true,
      hooks,
      cancelled: () => null,
    });
    const ending = attempt.run();
    // The socket path is picked at once; something put there before the listen (after the journal opens) makes it fail.
    const socketPath = socketPathFor(ctx.socketDir!, shard.index);
    writeFileSync(socketPath, "");
    const end = await ending;
    expect(end.kind).toBe("stopped");
    expect(end.kind === "stopped" && end.problem).toContain(socketPath);
    expect([attempt.state, seen]).toEqual(["stopped", []]);
    expect(await settledYet(gate.settled(60_000))).toBe(true);
  });

  test("an attempt that throws (its journal cannot be opened) rejects and leaves the gate", async () => {
    const { ctx, shard, gate } = setUp();
    const paths = { ...shardPaths(ctx, shard), log: path.join(ctx.logDir, "missing", "shard.log") };
    let attempt: ShardAttempt | null = null;
    const { seen, hooks } = recorder(() => attempt!);
    attempt = new ShardAttempt({ ctx, shard, paths, withEvents: true, hooks, cancelled: () => null });
    await expect(attempt.run()).rejects.toThrow();
    expect(seen).toEqual([]);
    expect(await settledYet(gate.settled(60_000))).toBe(true);
  });
});
