/** Live progress: CI heartbeat lines from a real run, and the TTY status area. */
import { afterAll, expect, test } from "bun:test";
import { startProgress, type ProgressSource } from "../runner/report/progress.ts";
import { makeSuite, runCli, removeSuites } from "./helpers/cli.ts";

test("without a TTY, a long-running shard gets heartbeat lines naming the test in flight", async () => {
  const dir = makeSuite({
    "agent.test.ts":
      'import { test } from "bun:test";\ntest("quick", () => {});\ntest("waits on the agent", async () => { await ' +
      "Bun.sleep(2600); });\n",
  });
  const run = await runCli(["run", "--root", dir, "--heartbeat", "1", "--timeout", "20"]);
  expect(run.code).toBe(0);
  const beats = run.stdout.split("\n").filter((l) => l.includes("RUNNING"));
  expect(beats.length).toBeGreaterThanOrEqual(1);
  expect(beats[0]).toMatch(/^\[1\/1\] RUNNING \d+\.\ds agent\.test\.ts: in flight: waits on the agent \(\d+\.\ds\)$/);
  // No cursor movement or colour in plain mode.
  expect(run.stdout).not.toContain("\x1b[");
});

const source = (): ProgressSource => ({
  total: 3,
  done: () => 1,
  running: () => [
    { index: 2, files: ["b.test.ts"], elapsedMs: () => 4200, inFlight: () => ({ name: "outer > slow", forMs: 1500 }) },
  ],
});

test("on a TTY, the status area shows counts and the test in flight, and log lines print above it", async () => {
  const written: string[] = [];
  const progress = startProgress({
    write: (t) => written.push(t),
    isTTY: true,
    columns: 100,
    heartbeatMs: 60_000,
    noColor: true,
    source: source(),
  });
  await Bun.sleep(300);
  progress.out.line("[3/3] START c.test.ts");
  progress.stop();
  const screen = written.join("");
  expect(screen).toContain("shards: 1 done, 1 running, 1 queued");
  expect(screen).toContain("[2]    4.2s b.test.ts  in flight: outer > slow (1.5s)");
  expect(screen).toContain("[3/3] START c.test.ts\n");
  // The area is erased before a log line and at stop: cursor up 2 lines, clear to end.
  expect(screen).toContain("\x1b[2A\x1b[0J");
  // NO_COLOR: no SGR colour sequences (…m), only cursor movement.
  expect(screen).not.toMatch(/\x1b\[[0-9;]*m/);
});

test("with colour allowed, the TTY area uses SGR sequences", async () => {
  const written: string[] = [];
  const progress = startProgress({
    write: (t) => written.push(t),
    isTTY: true,
    heartbeatMs: 60_000,
    noColor: false,
    source: source(),
  });
  await Bun.sleep(300);
  progress.stop();
  expect(written.join("")).toMatch(/\x1b\[1mshards: 1 done/);
});

afterAll(removeSuites);
