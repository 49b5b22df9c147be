/**
 * Two runs in one repository at once: separate run directories and logs, each
 * with its own report copy; with --lock the second waits for the first.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { RunReportSchema } from "../runner/results/report-model.ts";
import { makeSuite, runCli, removeSuites } from "./helpers/cli.ts";

const slow = (ms: number) =>
  `import { test } from "bun:test";\ntest("works for ${ms} ms", async () => { await Bun.sleep(${ms}); });\n`;
const ownReport = (dir: string, runId: string) =>
  RunReportSchema.parse(JSON.parse(readFileSync(path.join(dir, ".shardguard", "runs", runId, "report.json"), "utf8")));
const runIdOf = (stdout: string) => /run (\S+):/.exec(stdout)![1]!;

test("concurrent runs keep their own logs and report copies", async () => {
  const dir = makeSuite({ "a.test.ts": slow(800), "b.test.ts": slow(800) });
  const [one, two] = await Promise.all([
    runCli(["run", "--root", dir, "a.test.ts"]),
    runCli(["run", "--root", dir, "b.test.ts"]),
  ]);
  expect([one.code, two.code]).toEqual([0, 0]);
  const [idOne, idTwo] = [runIdOf(one.stdout), runIdOf(two.stdout)];
  expect(idOne).not.toBe(idTwo);
  const [repOne, repTwo] = [ownReport(dir, idOne), ownReport(dir, idTwo)];
  expect(repOne.shards.map((s) => s.files)).toEqual([["a.test.ts"]]);
  expect(repTwo.shards.map((s) => s.files)).toEqual([["b.test.ts"]]);
  expect(repOne.shards[0]!.logPath).not.toBe(repTwo.shards[0]!.logPath);
  for (const rep of [repOne, repTwo])
    expect(readFileSync(rep.shards[0]!.logPath!, "utf8")).toContain("works for 800 ms");
  // The stable path holds one complete report, from whichever finished last.
  const stable = RunReportSchema.parse(JSON.parse(readFileSync(path.join(dir, ".shardguard", "report.json"), "utf8")));
  expect([idOne, idTwo]).toContain(stable.runId);
  expect(stable.completed).toBe(true);
});

test("--lock NAME: the second run prints one waiting line and starts after the first ends", async () => {
  const dir = makeSuite({ "a.test.ts": slow(1200) });
  const lock = `sg-test-lane-${process.pid}`;
  const first = runCli(["run", "--root", dir, "--lock", lock]);
  await Bun.sleep(400);
  const second = await runCli(["run", "--root", dir, "--lock", lock]);
  const firstDone = await first;
  expect([firstDone.code, second.code]).toEqual([0, 0]);
  const waits = second.stdout.split("\n").filter((l) => l.includes(`waiting for lock ${lock} held by pid`));
  expect(waits).toHaveLength(1);
  const a = ownReport(dir, runIdOf(firstDone.stdout));
  const b = ownReport(dir, runIdOf(second.stdout));
  // Serialized: the second run's shard started after the first run finished.
  expect(Date.parse(b.shards[0]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(a.finishedAt!) - 50);
  expect(existsSync(path.join(dir, ".shardguard", "logs"))).toBe(true);
});

afterAll(removeSuites);
