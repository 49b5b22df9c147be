/**
 * `--files-per-shard auto` (docs/sharding.md, "Batches of many small files"):
 * the batch rule (pure), long recorded files alone, a wedged file in a batch
 * costing only its own verdict, what a file that changes process.env, the
 * working directory or a global leaves to the next file of its batch (shared
 * as in plain `bun test`, or under Bun's --isolate given after `--`), the
 * hostile fixtures batched, and bad values refused with one line.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import {
  CLI,
  fixtureFilesIn,
  HOSTILE_FIXTURES,
  makeSuite,
  readReport,
  removeSuites,
  runCli,
  type CliRun,
} from "./helpers/cli.ts";
import { bunBinary } from "./helpers/bun-versions.ts";
import { AUTO_BATCH, autoBatches } from "../runner/plan/auto-batch.ts";
import type { RunReport } from "../runner/results/report-model.ts";

afterAll(removeSuites);

const names = (n: number) => Array.from({ length: n }, (_, i) => `t/f${String(i + 1).padStart(3, "0")}.test.ts`);
const passing = (i: number) =>
  `import { test, expect } from "bun:test";\ntest("ok ${i}", () => expect(${i}).toBe(${i}));\n`;
const failing = `import { test, expect } from "bun:test";\ntest("fails", () => expect(1).toBe(2));\n`;
const wedged =
  `import { test } from "bun:test";\ntest("before", () => {});\n` +
  `test("spins", () => { while (true) {} });\ntest("after", () => {});\n`;

describe("the batch rule (plan/auto-batch.ts)", () => {
  test("shared batches (the default): one per job, longest first with timings, capped in work", () => {
    const files = names(200);
    // 200 × 50 ms = 10 s over 2 jobs → 5 s per batch → 2 contiguous batches of 100.
    const plain = autoBatches(files, { durations: new Map(), jobs: 2 });
    expect(plain.targetMs).toBe(5000);
    expect(plain.groups).toEqual([files.slice(0, 100), files.slice(100)]);
    // 7 s, 1 s and ten 0.2 s: 10 s over 2 → 5 s; the 7 s file alone, the 3 s rest in one batch.
    const durations = new Map<string, number>(names(12).map((f, i) => [f, i === 0 ? 7000 : i === 1 ? 1000 : 200]));
    const timed = autoBatches(names(12), { durations, jobs: 2 });
    expect(timed.groups).toEqual([[names(12)[0]!], names(12).slice(1)]);
    // 100 files of 1 s over 2 jobs: 50 s per job, past the cap → 4 batches of 25 s.
    const long = autoBatches(names(100), { durations: new Map(names(100).map((f) => [f, 1000])), jobs: 2 });
    expect(long.targetMs).toBe(AUTO_BATCH.maxSharedBatchMs);
    expect(long.groups.map((g) => g.length)).toEqual([25, 25, 25, 25]);
  });

  test("a batch's work is at most a quarter of the shard timeout (the timeout covers the whole batch)", () => {
    // 100 files of 1 s over 2 jobs would be 30 s batches; a 20 s timeout caps them at 5 s: 20 batches of 5.
    const durations = new Map(names(100).map((f) => [f, 1000]));
    const capped = autoBatches(names(100), { durations, jobs: 2, timeoutMs: 20_000 });
    expect(capped.targetMs).toBe(5000);
    expect(capped.groups.map((g) => g.length)).toEqual(new Array(20).fill(5));
    const isolated = autoBatches(names(100), { durations, jobs: 2, isolated: true, timeoutMs: 8000 });
    expect(isolated.targetMs).toBe(2000);
  });

  test("--isolate, no timings: contiguous runs of the plan, as many as the assumed work needs, at least one", () => {
    const files = names(200);
    const plan = autoBatches(files, { durations: new Map(), jobs: 2, isolated: true });
    // 200 × 50 ms = 10 s over 2 jobs × 4 batches = 1.25 s per batch → 8 batches of 25.
    expect(plan.targetMs).toBe(1250);
    expect(plan.groups.map((g) => g.length)).toEqual(new Array(8).fill(25));
    expect(plan.groups.flat()).toEqual(files);
    expect(autoBatches(names(3), { durations: new Map(), jobs: 4, isolated: true }).groups).toEqual([names(3)]);
  });

  test(
    "--isolate: a file whose recorded duration reaches the target is alone; " +
      "the rest are balanced longest first, each batch in plan order",
    () => {
      const files = names(12);
      const durations = new Map<string, number>([[files[3]!, 9000]]);
      for (const [i, f] of files.entries()) if (i !== 3) durations.set(f, 100 * (i + 1));
      const plan = autoBatches(files, { durations, jobs: 2, isolated: true });
      // Total 9000 + 7400 = 16.4 s over 8 → 2050 ms per batch: the 9 s file alone, 7.4 s in 4 batches.
      expect(plan.targetMs).toBe(2050);
      expect(plan.alone).toEqual([files[3]!]);
      expect(plan.groups).toContainEqual([files[3]!]);
      const others = plan.groups.filter((g) => g[0] !== files[3]);
      expect(others).toHaveLength(4);
      const loads = others.map((g) => g.reduce((s, f) => s + durations.get(f)!, 0));
      expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(300);
      for (const g of others) expect([...g].sort()).toEqual(g);
      expect(plan.groups.flat().sort()).toEqual(files);
    },
  );

  test("--isolate: unrecorded files cost the median of the recorded ones; the target stays in [min, max]", () => {
    const files = names(40);
    const durations = new Map(files.slice(0, 3).map((f, i) => [f, [10, 20, 900][i]!]));
    const plan = autoBatches(files, { durations, jobs: 1, isolated: true });
    // 37 × 20 + 930 = 1670 ms over 4 → 417 ms, raised to the 500 ms floor; 900 ms ≥ 500: alone.
    expect(plan.targetMs).toBe(AUTO_BATCH.minBatchMs);
    expect(plan.alone).toEqual([files[2]!]);
    const long = new Map(files.map((f) => [f, 60_000]));
    expect(autoBatches(files, { durations: long, jobs: 1, isolated: true }).targetMs).toBe(AUTO_BATCH.maxBatchMs);
  });
});

describe("shardguard list --files-per-shard auto --timings", () => {
  test("the long file of the timings is a shard of its own; the others share batches", async () => {
    const files: Record<string, string> = {};
    for (const [i, f] of names(10).entries()) files[f] = passing(i);
    const dir = makeSuite(files);
    const timings: Record<string, number> = Object.fromEntries(names(10).map((f) => [f, 100]));
    timings["t/f004.test.ts"] = 3000;
    writeFileSync(path.join(dir, "timings.json"), JSON.stringify({ version: 1, files: timings }));
    const run = await runCli([
      "list",
      "--root",
      dir,
      "--jobs",
      "2",
      "--files-per-shard",
      "auto",
      "--timings",
      path.join(dir, "timings.json"),
      "t",
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("files per shard auto");
    // Total 3.9 s over 2 jobs → 1.95 s: the 3 s file alone, the nine 100 ms files in one shared batch.
    const shards = run.stdout
      .split("\n  shard ")
      .slice(1)
      .map((block) =>
        block
          .split("\n")
          .slice(1)
          .map((l) => l.trim().split(" ")[0])
          .filter((l) => l?.startsWith("t/")),
      );
    expect(shards).toHaveLength(2);
    expect(shards).toContainEqual(["t/f004.test.ts"]);
    expect(shards.flat().sort()).toEqual(names(10));
  });
});

describe("a wedged file in an auto batch under --isolate (--timeout 4)", () => {
  let run: CliRun;
  let report: RunReport;
  beforeAll(async () => {
    const files: Record<string, string> = {};
    for (const [i, f] of names(12).entries()) files[f] = i === 9 ? failing : passing(i);
    files["t/f005.test.ts"] = wedged;
    const dir = makeSuite(files);
    run = await runCli([
      "run",
      "--root",
      dir,
      "--jobs",
      "1",
      "--files-per-shard",
      "auto",
      "--timeout",
      "4",
      "--grace",
      "1",
      "t",
      "--",
      "--isolate",
    ]);
    report = readReport(dir);
  }, 90_000);

  test("the run batches with the --isolate given and says so in the report", () => {
    expect(report.settings.filesPerShard).toBe("auto");
    expect(report.settings.bunArgs).toContain("--isolate");
    // 12 × 50 ms assumed, 500 ms per batch: two batches of six.
    expect(report.shards[0]!.reason).toMatch(/run again in shard/);
  });

  test("every other file keeps its true status and the wedged one is timed-out, each reported once", () => {
    expect(run.code).toBe(1);
    const seen = new Map<string, [string, string][]>();
    for (const shard of report.shards)
      for (const file of shard.files) {
        expect(seen.has(file)).toBe(false);
        seen.set(
          file,
          shard.tests.filter((t) => t.file === file).map((t) => [t.name, t.status]),
        );
      }
    expect(seen.size).toBe(12);
    expect(seen.get("t/f005.test.ts")).toEqual([
      ["before", "passed"],
      ["spins", "timed-out"],
      ["after", "never-started"],
    ]);
    expect(seen.get("t/f010.test.ts")).toEqual([["fails", "failed"]]);
    for (const [file, tests] of seen) {
      if (file === "t/f005.test.ts" || file === "t/f010.test.ts") continue;
      expect([file, tests]).toEqual([file, [[`ok ${Number(file.slice(3, 6)) - 1}`, "passed"]]]);
    }
  });
});

describe("a file of an auto batch under --isolate that stops at its top level, before registering a test", () => {
  /** One batch: two passing tests, a file without tests, the stopping file, one more passing file. */
  const batch = (stops: string) => ({
    "t/a.test.ts": `import { test } from "bun:test";\ntest("a1", () => {});\ntest("a2", async () => {});\n`,
    "t/b.test.ts": `export const nothing = 1;\n`,
    "t/c.test.ts": `import { test } from "bun:test";\n${stops}\ntest("never registered", () => {});\n`,
    "t/d.test.ts": passing(4),
  });
  const statuses = (report: RunReport) =>
    report.shards.flatMap((s) => s.tests.map((t) => [s.index, t.file, t.name, t.status]));

  for (const [label, stops, status] of [
    ["spins (while (true) {})", "while (true) {}", "timed-out"],
    ["waits for good (a top-level await)", "await new Promise(() => setInterval(() => {}, 1000));", "timed-out"],
    ["calls process.exit(0)", "process.exit(0);", "crashed"],
  ] as const) {
    test(`${label}: it alone gets the ${status} verdict, once; the ` +
      `file before it keeps its passes; the file after it runs again`, async () => {
      const dir = makeSuite(batch(stops));
      const run = await runCli([
        "run",
        "--root",
        dir,
        "--jobs",
        "1",
        "--files-per-shard",
        "auto",
        "--timeout",
        "3",
        "--grace",
        "1",
        "t",
        "--",
        "--isolate",
      ]);
      expect(run.code).toBe(1);
      const report = readReport(dir);
      expect(report.shards).toHaveLength(2);
      expect(statuses(report)).toEqual([
        [1, "t/a.test.ts", "a1", "passed"],
        [1, "t/a.test.ts", "a2", "passed"],
        [1, "t/b.test.ts", "(whole file)", "skipped"],
        [1, "t/c.test.ts", "(whole file)", status],
        [2, "t/d.test.ts", "ok 4", "passed"],
      ]);
      expect(report.shards[0]!.tests.find((t) => t.file === "t/b.test.ts")!.failure).toMatchObject({
        type: "no-tests",
      });
      expect(report.shards[0]!.reason).toContain("1 file in which no test started run again in shard 2");
    }, 30_000);
  }

  test("a batch that ends normally has no note about an end-of-run barrier (batches never wait at one)", async () => {
    const dir = makeSuite({ "t/a.test.ts": passing(1), "t/b.test.ts": passing(2), "t/c.test.ts": passing(3) });
    const run = await runCli([
      "run",
      "--root",
      dir,
      "--jobs",
      "1",
      "--files-per-shard",
      "auto",
      "t",
      "--",
      "--isolate",
    ]);
    expect(run.code).toBe(0);
    const report = readReport(dir);
    expect(report.shards).toHaveLength(1);
    expect(report.shards[0]!.notes ?? []).toEqual([]);
  }, 30_000);
});

/** Three files in one batch: the first changes process.env, the cwd and a global; the others report what they see. */
const leaking = {
  "t/a.test.ts":
    `import { test } from "bun:test";\nimport { mkdirSync } from "node:fs";\ntest("changes the ` +
    `process", () => {\n  process.env.SG_LEAK = "a";\n  mkdirSync("elsewhere", { recursive: true });\n` +
    `  process.chdir("elsewhere");\n  (globalThis as any).sgLeak = 1;\n});\n`,
  "t/b.test.ts":
    `import { test, expect } from "bun:test";\ntest("env unchanged", () => ` +
    `expect(process.env.SG_LEAK).toBeUndefined());\n` +
    `test("global unchanged", () => expect((globalThis as any).sgLeak).toBeUndefined());\n`,
  "t/c.test.ts":
    `import { test, expect } from "bun:test";\n` +
    `test("cwd is the root", () => expect(process.cwd()).toBe(process.env.SG_ROOT));\n`,
};

/** What the files of `leaking` report when they share one process (plain `bun test`). */
const sharedStatuses = {
  "t/a.test.ts > changes the process": "passed",
  "t/b.test.ts > env unchanged": "failed",
  "t/b.test.ts > global unchanged": "failed",
  "t/c.test.ts > cwd is the root": "failed",
} as const;

describe("what a file that changes the process leaves to the next file of its batch", () => {
  const statuses = (report: RunReport) =>
    Object.fromEntries(report.shards.flatMap((s) => s.tests).map((t) => [`${t.file} > ${t.name}`, t.status]));

  test("auto with --isolate, pinned Bun: env, cwd and globals are as the batch started", async () => {
    const dir = makeSuite(leaking);
    const run = await runCli(["run", "--root", dir, "--files-per-shard", "auto", "t", "--", "--isolate"], {
      env: { SG_ROOT: dir },
    });
    const report = readReport(dir);
    expect(report.shards).toHaveLength(1);
    expect(statuses(report)).toEqual({
      "t/a.test.ts > changes the process": "passed",
      "t/b.test.ts > env unchanged": "passed",
      "t/b.test.ts > global unchanged": "passed",
      "t/c.test.ts > cwd is the root": "passed",
    });
    expect(run.code).toBe(0);
  }, 60_000);

  test("auto with --isolate on Bun 1.3.13: env and globals as the batch " +
    "started, but the working directory stays changed", async () => {
    const dir = makeSuite(leaking);
    const bun = await bunBinary("1.3.13");
    await runCli(["run", "--root", dir, "--files-per-shard", "auto", "--bun", bun, "t", "--", "--isolate"], {
      env: { SG_ROOT: dir },
    });
    expect(statuses(readReport(dir))).toEqual({
      "t/a.test.ts > changes the process": "passed",
      "t/b.test.ts > env unchanged": "passed",
      "t/b.test.ts > global unchanged": "passed",
      "t/c.test.ts > cwd is the root": "failed",
    });
  }, 120_000);

  test("Bun 1.3.3 has no --isolate: auto with it is refused with one line naming the Bun and the flag (exit 2); " +
    "auto without it runs, the files sharing the batch's process", async () => {
    const dir = makeSuite(leaking);
    const bun = await bunBinary("1.3.3");
    const refused = await runCli(
      ["run", "--root", dir, "--files-per-shard", "auto", "--bun", bun, "t", "--", "--isolate"],
      { env: { SG_ROOT: dir } },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toEqual([
      `shardguard: invalid --bun ${JSON.stringify(bun)}: Bun 1.3.3 has no bun test flag --isolate (files would share ` +
        "one global object); drop it, or use another Bun (1.3.13 or later)",
    ]);
    expect(refused.stdout).not.toContain("START");
    const run = await runCli(["run", "--root", dir, "--files-per-shard", "auto", "--bun", bun, "t"], {
      env: { SG_ROOT: dir },
    });
    expect(run.code).toBe(1);
    expect(statuses(readReport(dir))).toEqual(sharedStatuses);
  }, 60_000);

  test("Bun 1.3.14: auto with --isolate and test events is refused with " +
    "one line (exit 2); with --no-test-events it runs", async () => {
    const dir = makeSuite(leaking);
    const bun = await bunBinary("1.3.14");
    const refused = await runCli(
      ["run", "--root", dir, "--files-per-shard", "auto", "--bun", bun, "t", "--", "--isolate"],
      { env: { SG_ROOT: dir } },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("Bun 1.3.14 loses the end of an --isolate run under the test events");
    expect(refused.stderr).toStartWith(`shardguard: invalid --bun ${JSON.stringify(bun)}: `);
    expect(refused.stdout).not.toContain("START");
    // Without --bun (shardguard itself under 1.3.14, as a project pinning it runs it) the refusal names that Bun.
    const own = spawnSync(bun, [CLI, "run", "--root", dir, "--files-per-shard", "auto", "t", "--", "--isolate"], {
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", SG_ROOT: dir },
      timeout: 60_000,
    });
    expect(own.status).toBe(2);
    expect(own.stderr.trim().split("\n")).toHaveLength(1);
    expect(own.stderr).toStartWith(
      `shardguard: the Bun running shardguard (Bun 1.3.14, ${realpathSync(bun)}) cannot run this: `,
    );
    expect(own.stderr).not.toContain('--bun "');
    expect(own.stdout).not.toContain("START");
    const run = await runCli(
      ["run", "--root", dir, "--files-per-shard", "auto", "--no-test-events", "--bun", bun, "t", "--", "--isolate"],
      { env: { SG_ROOT: dir } },
    );
    expect(statuses(readReport(dir))).toEqual({
      "t/a.test.ts > changes the process": "passed",
      "t/b.test.ts > env unchanged": "passed",
      "t/b.test.ts > global unchanged": "passed",
      "t/c.test.ts > cwd is the root": "failed",
    });
    expect(run.code).toBe(1);
  }, 120_000);

  test("auto without --isolate and a fixed batch (--files-per-shard 3): the next files see all three, as in plain " +
    "bun test", async () => {
    const dir = makeSuite(leaking);
    await runCli(["run", "--root", dir, "--files-per-shard", "3", "t"], { env: { SG_ROOT: dir } });
    expect(statuses(readReport(dir))).toEqual(sharedStatuses);
    const auto = await runCli(["run", "--root", dir, "--files-per-shard", "auto", "t"], { env: { SG_ROOT: dir } });
    const report = readReport(dir);
    expect(report.settings.bunArgs).not.toContain("--isolate");
    expect(statuses(report)).toEqual(sharedStatuses);
    expect(auto.code).toBe(1);
  }, 60_000);
});

describe("the hostile fixtures (test/fixtures/hostile) batched by auto with --isolate", () => {
  test("every test has the status it has with one process per file", async () => {
    const dir = makeSuite(fixtureFilesIn(HOSTILE_FIXTURES));
    const pids = path.join(dir, "pids");
    mkdirSync(pids);
    const env = { SG_HOSTILE_PIDS: pids };
    const perTest = (out: string) => {
      const report = readReport(dir, path.join(out, "report.json"));
      const map = new Map<string, string[]>();
      for (const t of report.shards.flatMap((s) => s.tests))
        map.set(t.file, [...(map.get(t.file) ?? []), `${t.name.slice(0, 60)}: ${t.status}`].sort());
      return Object.fromEntries([...map].sort());
    };
    try {
      // Both runs at once: most of each is a wait on a 7 s timeout.
      const run = (out: string, extra: string[]) =>
        runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "7", "--grace", "1", "--out", out, ...extra], {
          env,
          limitMs: 90_000,
        });
      const [, auto] = await Promise.all([
        run(path.join(dir, "one"), []),
        run(path.join(dir, "auto"), ["--files-per-shard", "auto", "--", "--isolate"]),
      ]);
      expect(readReport(dir, path.join(dir, "auto", "report.json")).shards.some((s) => s.files.length > 1)).toBe(true);
      expect(perTest(path.join(dir, "auto"))).toEqual(perTest(path.join(dir, "one")));
      expect(auto.code).toBe(1);
    } finally {
      // The fixtures' escapees, should a run have left any.
      for (const f of readdirSync(pids))
        for (const line of readFileSync(path.join(pids, f), "utf8").split("\n")) {
          const pid = Number(line.trim().split(" ").pop());
          if (pid > 1)
            try {
              process.kill(pid, "SIGKILL");
            } catch {
              /* gone */
            }
        }
    }
  }, 120_000);
});

describe("bad values: one line, exit 2, nothing started", () => {
  const suite = () => makeSuite({ "t/a.test.ts": passing(1) });
  const refused = async (args: string[], env: Record<string, string> = {}, bunfig?: string) => {
    const dir = suite();
    if (bunfig !== undefined) writeFileSync(path.join(dir, "bunfig.toml"), bunfig);
    // The pattern before the flags: after a "--" among them it would be a bun test argument.
    const run = await runCli(["run", "--root", dir, "t", ...args], { env });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stdout).not.toContain("START");
    return run.stderr.trim();
  };

  test("a word other than auto, zero, a fraction: named with what is accepted", async () => {
    expect(await refused(["--files-per-shard", "Auto"])).toBe(
      'shardguard: invalid --files-per-shard "Auto": expected a whole number from 1 to 10000, or auto',
    );
    expect(await refused([], { SHARDGUARD_FILES_PER_SHARD: "0" })).toContain("invalid SHARDGUARD_FILES_PER_SHARD");
    expect(await refused([], {}, "[shardguard]\nfiles-per-shard = 2.5\n")).toContain(
      "expected a whole number from 1 to 10000, or auto",
    );
  }, 60_000);

  test("SHARDGUARD_FILES_PER_SHARD=auto and a preset's " +
    'files-per-shard = "auto" are accepted like the flag', async () => {
    const dir = makeSuite({ "t/a.test.ts": passing(1), "t/b.test.ts": passing(2) });
    const viaEnv = await runCli(["list", "--root", dir, "t"], { env: { SHARDGUARD_FILES_PER_SHARD: "auto" } });
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.stdout).toContain("files per shard auto");
    writeFileSync(
      path.join(dir, "bunfig.toml"),
      '[shardguard.presets.small]\nglobs = ["t/*.test.ts"]\nfiles-per-shard = "auto"\n',
    );
    const viaPreset = await runCli(["list", "--root", dir, "--preset", "small"], { cwd: dir });
    expect(viaPreset.code).toBe(0);
    expect(viaPreset.stdout).not.toContain("--isolate");
    expect(viaPreset.stdout).toContain("1 shard;");
  }, 30_000);

  test('bunfig\'s files-per-shard = "auto" is accepted like the flag', async () => {
    const dir = suite();
    writeFileSync(path.join(dir, "bunfig.toml"), '[shardguard]\nfiles-per-shard = "auto"\n');
    const run = await runCli(["list", "--root", dir, "t"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("files per shard auto");
  }, 30_000);
});
