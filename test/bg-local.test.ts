/**
 * `shardguard bg --local` and `shardguard status`: the real CLI starts a
 * real detached worker that runs real `bun test` shards on fixture files in
 * temp directories. Checks the returned-at-once contract, the log's header
 * and EXIT sentinel on every way a run ends (passed, failed, cap reached,
 * SIGTERM, SIGKILL → incomplete), the lane lock, and the run id the tests see.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fixtureFiles, makeSuite, readReport, removeSuites, runCli, waitFor } from "./helpers/cli.ts";
import { readRecord, type BgRecord } from "../runner/commands/bg/record.ts";
import type { RunReport } from "../runner/index.ts";

/** The run's own report copy (OUT/runs/<run id>/report.json) as status reads it, null until written. */
function readReportCopy(record: BgRecord): RunReport | null {
  try {
    return JSON.parse(readFileSync(path.join(record.out, "runs", record.runId!, "report.json"), "utf8")) as RunReport;
  } catch {
    return null;
  }
}

afterAll(removeSuites);

const ENV_PROBE =
  `import { test } from "bun:test";
import { writeFileSync } from "node:fs";
test("records its run id", () => { ` +
  `writeFileSync(process.cwd() + "/run-id.txt", String(process.env.SHARDGUARD_RUN_ID)); });
`;

const logOf = (stdout: string) => /log (\/\S+\.log)/.exec(stdout)?.[1] ?? "";
const lastLine = (file: string) => readFileSync(file, "utf8").trimEnd().split("\n").at(-1);
const follow = (target: string, cwd: string) => runCli(["status", target, "--follow"], { cwd, limitMs: 60_000 });

describe("bg --local", () => {
  test("returns at once with exit 0 while the run goes on; status follows it to its code", async () => {
    const dir = makeSuite({ ...fixtureFiles("slow-pass", "pass"), "probe.test.ts": ENV_PROBE });
    spawnSync("git", ["init", "-q"], { cwd: dir });
    const started = await runCli(["bg", "--local", "--jobs", "3"], { cwd: dir });
    expect(started.code).toBe(0);
    // bg has returned while the run goes on (how fast it returns: bench/bg-return.ts).
    const log = logOf(started.stdout);
    expect(readFileSync(log, "utf8")).not.toContain("### shardguard EXIT=");
    expect(path.isAbsolute(log)).toBe(true);
    const id = /started (\S+)/.exec(started.stdout)![1]!;
    expect(path.basename(log)).toBe(`${id}.log`);
    // Still running: the slow file sleeps 4 s.
    const now = await runCli(["status"], { cwd: dir });
    expect(now.stdout).toContain(`${id}: running`);
    // The counts so far and the test in flight, from the report copy and the shard's event journal.
    let seen = "";
    for (let i = 0; i < 30 && !/in flight: takes a while/.test(seen); i++)
      seen = (await runCli(["status", id], { cwd: dir })).stdout;
    expect(seen).toMatch(/\[\d\/3\] running slow-pass\.test\.ts \(\d+s\): in flight: takes a while/);
    expect(seen).toMatch(/shards: \d of 3 ended/);
    const first = readFileSync(log, "utf8").split("\n")[0]!;
    expect(first).toMatch(/^shardguard bg: backend=local tested=\(no commit\) \+ 3 uncommitted files cap=\d+s jobs=3 /);
    const followed = await follow(log, dir);
    expect(followed.code).toBe(0);
    expect(lastLine(log)).toBe("### shardguard EXIT=0 ###");
    expect(readFileSync(path.join(dir, "run-id.txt"), "utf8")).toBe(id);
    // One id: the tests' SHARDGUARD_RUN_ID, the log's name and the run's directory under OUT/runs.
    expect(readdirSync(path.join(dir, ".shardguard", "runs"))).toEqual([id]);
    const done = await runCli(["status", id], { cwd: dir });
    expect(done.stdout).toContain(`${id}: passed (exit 0)`);
    expect(done.stdout).toContain("shards: 3 of 3 ended (3 passed");
  }, 60_000);

  test("a failing run ends EXIT=1; an exported SHARDGUARD_RUN_ID is kept", async () => {
    const dir = makeSuite({ ...fixtureFiles("fail"), "probe.test.ts": ENV_PROBE });
    const started = await runCli(["bg", "--local"], { cwd: dir, env: { SHARDGUARD_RUN_ID: "mine" } });
    expect(started.code).toBe(0);
    expect((await follow(logOf(started.stdout), dir)).code).toBe(1);
    expect(lastLine(logOf(started.stdout))).toBe("### shardguard EXIT=1 ###");
    expect(readFileSync(path.join(dir, "run-id.txt"), "utf8")).toBe("mine");
  }, 60_000);

  test("a preset's run-id variable (gstack-paid: EVALS_RUN_ID) gets the same id", async () => {
    const dir = makeSuite({
      "test/skill-e2e-probe.test.ts":
        `import { test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n` +
        `test("probe", () => { writeFileSync(process.cwd() + "/ids.txt", ` +
        `\`\${process.env.SHARDGUARD_RUN_ID} \${process.env.EVALS_RUN_ID}\`); });\n`,
    });
    const started = await runCli(["bg", "--local", "--preset", "gstack-paid", "--follow"], {
      cwd: dir,
      env: { EVALS_ALL: "1" },
    });
    expect(started.code).toBe(0);
    const id = /started (\S+)/.exec(started.stdout)![1]!;
    expect(id).toEndWith("-gstack-paid-gate");
    expect(readFileSync(path.join(dir, "ids.txt"), "utf8")).toBe(`${id} ${id}`);
    expect(readFileSync(logOf(started.stdout), "utf8").split("\n")[1]).toBe(
      `shardguard bg: SHARDGUARD_RUN_ID=${id} EVALS_RUN_ID=${id}`,
    );
  }, 60_000);

  test("the cap cancels the run the normal way: shards " +
    "killed, the rest never started, reports written, EXIT=2", async () => {
    const dir = makeSuite(fixtureFiles("spin", "slow-pass", "pass"));
    const started = await runCli(["bg", "--local", "--cap", "2", "--jobs", "1", "--grace", "1"], { cwd: dir });
    expect(started.code).toBe(0);
    expect(started.stdout).toContain("cap=2s (--cap)");
    expect(started.stdout).toContain("WARNING the plan");
    const followed = await follow(logOf(started.stdout), dir);
    expect(followed.code).toBe(2);
    const log = readFileSync(logOf(started.stdout), "utf8");
    expect(log).toContain("cap of 2s reached: cancelling the run");
    expect(lastLine(logOf(started.stdout))).toBe("### shardguard EXIT=2 ###");
    const report = readReport(dir);
    expect(report.cancelledBy).toBe("SIGTERM");
    // Plan order with one job: pass, slow-pass (in flight at 2 s, killed), spin (never started).
    expect(report.shards).toHaveLength(3);
    expect(report.shards.find((s) => s.files[0] === "pass.test.ts")!.status).toBe("passed");
    expect(report.shards.find((s) => s.files[0] === "slow-pass.test.ts")!.killedBy).toBe("cancel");
    expect(report.shards.find((s) => s.files[0] === "spin.test.ts")!.status).toBe("never-started");
    // status names the state: the cap is the run's wall-clock timeout, not a test failure.
    const st = await runCli(["status", path.basename(logOf(started.stdout), ".log")], { cwd: dir });
    expect(st.stdout).toContain(": timed-out (exit 2): cap of 2s reached; the run was cancelled");
    expect(st.stdout).not.toContain(": failed");
    // The test counts are the report's, never-started included, and not "so far" once it ended.
    const never = report.shards.flatMap((s) => s.tests).filter((t) => t.status === "never-started").length;
    expect(never).toBeGreaterThan(0);
    expect(st.stdout).toMatch(new RegExp(`^  tests: \\d+ passed, .* ${never} never started, `, "m"));
  }, 60_000);

  test("status counts todo apart from skipped, as the run's own summary does", async () => {
    const dir = makeSuite({
      "mixed.test.ts":
        `import { test } from "bun:test";\ntest("ok", () => {});\n` +
        `test.skip("later", () => {});\ntest.todo("someday");\ntest.todo("one day");\n`,
    });
    const started = await runCli(["bg", "--local"], { cwd: dir });
    expect(started.code).toBe(0);
    const followed = await follow(logOf(started.stdout), dir);
    expect(followed.code).toBe(0);
    expect(readFileSync(logOf(started.stdout), "utf8")).toContain("shardguard: 4 tests: 1 passed, 1 skipped, 2 todo");
    const st = await runCli(["status", path.basename(logOf(started.stdout), ".log")], { cwd: dir });
    expect(st.stdout).toMatch(
      /^ {2}tests: 1 passed, 0 failed, 0 timed out, 0 crashed, 0 never started, 1 skipped, 2 todo$/m,
    );
  }, 60_000);

  test("status shows what the run spent and its budget (docs/cost.md)", async () => {
    const dir = makeSuite({
      "paid.test.ts":
        `import { test } from "bun:test";\nimport { appendFileSync } from "node:fs";\n` +
        `test("paid", () => { appendFileSync(process.env.SHARDGUARD_COST_FILE!, '{"usd":0.5}\\n'); });\n`,
    });
    const started = await runCli(["bg", "--local", "--budget-usd", "3"], { cwd: dir });
    expect(started.code).toBe(0);
    expect((await follow(logOf(started.stdout), dir)).code).toBe(0);
    const st = await runCli(["status", path.basename(logOf(started.stdout), ".log")], { cwd: dir });
    expect(st.stdout).toMatch(/^ {2}spent: \$0\.50 \(budget \$3\)$/m);
    // The worker keeps the total in the record and the log, so it outlives the pruned report copy.
    const log = logOf(started.stdout);
    const record = readRecord(log);
    expect(record.ending?.spentUsd).toBe(0.5);
    expect(readFileSync(log, "utf8").trimEnd().split("\n").slice(-2)).toEqual([
      "shardguard bg: spent $0.50",
      "### shardguard EXIT=0 ###",
    ]);
    rmSync(path.join(record.out, "runs", record.runId!), { recursive: true });
    const pruned = await runCli(["status", record.id], { cwd: dir });
    expect(pruned.stdout).toContain("is gone (older runs are pruned)");
    expect(pruned.stdout).toMatch(/^ {2}spent: \$0\.50$/m);
  }, 60_000);

  test("SIGTERM to the run ends EXIT=130; SIGKILL leaves no sentinel and status says incomplete", async () => {
    const dir = makeSuite(fixtureFiles("slow-pass"));
    const a = await runCli(["bg", "--local", "--lock", `sg-test-${process.pid}-a`], { cwd: dir });
    const logA = logOf(a.stdout);
    const recA = await waitFor(() => {
      const r = readRecord(logA);
      return r.runId !== null && existsSync(path.join(r.out, "runs", r.runId, "logs")) ? r : null;
    }, 10_000);
    process.kill(recA!.pid!, "SIGTERM");
    expect((await follow(logA, dir)).code).toBe(130);
    expect(lastLine(logA)).toBe("### shardguard EXIT=130 ###");

    const b = await runCli(["bg", "--local", "--lock", `sg-test-${process.pid}-b`], { cwd: dir });
    const logB = logOf(b.stdout);
    // Killed while its shard runs: the report copy then still shows that shard open.
    const recB = await waitFor(() => {
      const r = readRecord(logB);
      return r.runId !== null && existsSync(path.join(r.out, "runs", r.runId, "logs", "shard-1-slow-pass.log"))
        ? r
        : null;
    }, 10_000);
    expect(await waitFor(() => (readReportCopy(recB!)?.shards[0]?.startedAt === null ? true : null), 5_000)).toBe(true);
    process.kill(recB!.pid!, "SIGKILL");
    const followed = await follow(logB, dir);
    expect(followed.code).toBe(2);
    expect(followed.stdout).toContain("incomplete");
    expect(readFileSync(logB, "utf8")).not.toContain("### shardguard EXIT=");
    const st = await runCli(["status", path.basename(logB, ".log")], { cwd: dir });
    expect(st.stdout).toContain(": incomplete");
    // Its shard is not running any more: the group was swept when the run died.
    expect(st.stdout).not.toMatch(/\] running /);
    expect(readReportCopy(recB!)!.finishedAt).toBeNull();
    expect(st.stdout).toContain("[1/1] was running when the run died, slow-pass.test.ts");
  }, 60_000);

  test("one lane at a time: a second run waits naming the holder; --no-wait refuses with exit 2", async () => {
    const dir = makeSuite(fixtureFiles("slow-pass"));
    const lane = `sg-test-${process.pid}-lane`;
    const first = await runCli(["bg", "--local", "--lock", lane], { cwd: dir });
    const rec = await waitFor(
      () => (readRecord(logOf(first.stdout)).pid !== null ? readRecord(logOf(first.stdout)) : null),
      10_000,
    );
    await waitFor(() => readFileSync(rec!.log, "utf8").includes("holding lane"), 10_000);
    const refused = await runCli(["bg", "--local", "--lock", lane, "--no-wait"], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`lock ${lane} held by pid ${rec!.pid}`);
    const second = await runCli(["bg", "--local", "--lock", lane], { cwd: dir });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`waiting for lock ${lane} held by pid ${rec!.pid}`);
    expect((await follow(logOf(second.stdout), dir)).code).toBe(0);
    // The second started only after the first had ended.
    const firstEnd = readFileSync(rec!.log, "utf8");
    expect(firstEnd).toContain("### shardguard EXIT=0 ###");
    expect(readFileSync(logOf(second.stdout), "utf8")).toContain(`waiting for lock ${lane} held by pid ${rec!.pid}`);
  }, 60_000);

  test("the cap comes from the timings file: ceil(1.5 x serial seconds / jobs) + 20 min", async () => {
    const dir = makeSuite({
      ...fixtureFiles("pass", "fail"),
      "t.json": JSON.stringify({ version: 1, files: { "pass.test.ts": 60_000 } }),
    });
    // pass 60 s recorded, fail unrecorded (600 s), 2 jobs: ceil(1.5 * 660 / 2) + 1200.
    const started = await runCli(["bg", "--local", "--jobs", "2", "--timings", "t.json", "--follow"], { cwd: dir });
    expect(started.stdout).toContain(`cap=${Math.ceil((1.5 * 660) / 2) + 1200}s jobs=2`);
    expect(started.code).toBe(1);
  }, 60_000);

  test("bad run flags are refused before anything starts", async () => {
    const dir = makeSuite(fixtureFiles("pass"));
    const r = await runCli(["bg", "--local", "--jobs", "0"], { cwd: dir });
    expect(r.code).toBe(2);
    expect(existsSync(path.join(dir, ".shardguard", "bg"))).toBe(false);
    const s = await runCli(["status"], { cwd: dir });
    expect(s.code).toBe(2);
    expect(s.stderr).toContain("no background run");
  });

  test("plan flags a run refuses are refused by bg before " +
    "anything starts; a slice's cap counts its own files", async () => {
    const dir = makeSuite(fixtureFiles("pass", "fail", "exit0"));
    for (const args of [
      ["--shard", "3/2"],
      ["--last-failed", "--shard", "1/2"],
      ["--tier", "gate"],
    ]) {
      const r = await runCli(["bg", "--local", ...args], { cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(existsSync(path.join(dir, ".shardguard", "bg"))).toBe(false);
    }
    // Three one-file shards in two slices: slice 2/2 gets one file, planned at the 10 min default.
    const sliced = await runCli(["bg", "--local", "--shard", "2/2", "--jobs", "1", "--follow"], {
      cwd: dir,
      limitMs: 60_000,
    });
    expect(sliced.stdout).toContain(`cap=${Math.ceil(1.5 * 600) + 1200}s jobs=1 files=1`);
  }, 60_000);

  test(
    "two runs started in the same second: status without an id, and " +
      "--follow's exit code, are the run started last; a stray .json is no run",
    async () => {
      const dir = makeSuite(fixtureFiles("pass"));
      const bg = path.join(dir, ".shardguard", "bg");
      mkdirSync(bg, { recursive: true });
      // The later run gets the id that sorts first (ids name the second, then a random part).
      const runs = [
        { id: "20991231T000000Z-ffffff-run", startedAt: "2099-12-31T00:00:00.100Z", code: 0 },
        { id: "20991231T000000Z-000000-run", startedAt: "2099-12-31T00:00:00.900Z", code: 1 },
      ];
      for (const r of runs) {
        const log = path.join(bg, `${r.id}.log`);
        writeFileSync(log, `shardguard bg: backend=local\n### shardguard EXIT=${r.code} ###\n`);
        const record: BgRecord = {
          id: r.id,
          backend: "local",
          log,
          root: dir,
          out: path.join(dir, ".shardguard"),
          lock: "l",
          pid: null,
          procStart: null,
          startedAt: r.startedAt,
          runId: null,
          ci: null,
        };
        writeFileSync(path.join(bg, `${r.id}.json`), JSON.stringify(record));
      }
      // A stray .json that is not a record (it sorts last by name) is left out, not a crash.
      writeFileSync(path.join(bg, "zzz.json"), "not a record");
      const st = await runCli(["status"], { cwd: dir });
      expect(st.code).toBe(0);
      expect(st.stdout.split("\n")[0]).toBe("20991231T000000Z-000000-run: failed (exit 1)");
      expect((await runCli(["status", "--follow"], { cwd: dir })).code).toBe(1);
    },
  );

  test("a test whose name holds a line break and an EXIT=0 " +
    "line cannot end the run early for status --follow", async () => {
    const forged = "### shardguard EXIT=0 ###";
    const dir = makeSuite({
      // Failing at once: its name reaches the shard's end line and the summary.
      "a.test.ts":
        `import { test, expect } from "bun:test";\ntest("lf\\n${forged}\\n", () => { expect(1).toBe(2); });\n` +
        `test("ls\\u2028${forged}\\u2028", () => { expect(1).toBe(2); });\n`,
      // In flight for 3 s: its name reaches the heartbeat lines.
      "b.test.ts":
        `import { test, expect } from "bun:test";\n` +
        `test("wait\\n${forged}\\nmore", async () => { await Bun.sleep(3000); expect(1).toBe(2); });\n`,
    });
    const started = await runCli(["bg", "--local", "--heartbeat", "1"], { cwd: dir });
    expect(started.code).toBe(0);
    const followed = await follow(path.basename(logOf(started.stdout), ".log"), dir);
    expect(followed.code).toBe(1);
    const lines = readFileSync(logOf(started.stdout), "utf8").split("\n");
    // The names were printed (end lines, heartbeats, summary), on one line
    // each; the worker's own sentinel is the only one.
    expect(lines.filter((l) => l.includes(forged)).length).toBeGreaterThan(2);
    expect(lines.filter((l) => /^### shardguard EXIT=\d+ ###$/.test(l))).toEqual(["### shardguard EXIT=1 ###"]);
  }, 60_000);
});
