/**
 * Named resource locks and exclusive files with real `bun test` children:
 * holders of one resource never overlap (START and end from report.json),
 * an exclusive file runs with nothing else alive while the others kept the
 * pool busy before it, a SIGINT while a shard waits reports it never-started
 * with what it waited for; `list` shows resources; every bad input is one
 * line, exit 2, nothing started; each source of the settings, presets
 * included, in the one precedence order.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import {
  makeSuite,
  readReport,
  removeSuites,
  runCli,
  shardOf,
  survivors,
  type CliRun,
  tempDir,
} from "./helpers/cli.ts";
import type { RunReport, ShardResult } from "../runner/results/report-model.ts";

afterAll(removeSuites);

/**
 * A test file that marks itself alive in `SG_ALIVE` while its test runs;
 * `alone` makes it fail when any other file was alive at its start or end.
 */
const file = (name: string, ms: number, alone = false) => `import { expect, test } from "bun:test";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
const dir = process.env.SG_ALIVE!;
test(${JSON.stringify(name)}, async () => {
  const others = () => readdirSync(dir).filter((f) => f !== ${JSON.stringify(name)});
  writeFileSync(dir + "/" + ${JSON.stringify(name)}, "");
  const atStart = others();
  await Bun.sleep(${ms});
  const atEnd = others();
  rmSync(dir + "/" + ${JSON.stringify(name)});
  ${alone ? "expect([...atStart, ...atEnd]).toEqual([]);" : ""}
});
`;

/** A shard's process interval in wall-clock ms: its spawn to its process group gone. */
const span = (s: ShardResult) => {
  const start = Date.parse(s.startedAt!);
  return { start, end: start + s.timeline!.goneMs };
};
/** ISO times are whole ms: an end and the next start in the same ms are not an overlap. */
const overlaps = (a: ShardResult, b: ShardResult) => span(a).start < span(b).end - 1 && span(b).start < span(a).end - 1;

describe("a run with a shared resource and an exclusive file, --jobs 3", () => {
  let dir: string;
  let run: CliRun;
  let report: RunReport;
  beforeAll(async () => {
    dir = makeSuite({
      "test/a.test.ts": file("a", 900),
      "test/b.test.ts": file("b", 500),
      "test/c.test.ts": file("c", 700),
      "test/d.test.ts": file("d", 700),
      "test/e.test.ts": file("e", 300, true),
      "test/f.test.ts": file("f", 500),
    });
    const alive = tempDir("sg-alive-");
    run = await runCli(
      [
        "run",
        "--root",
        dir,
        "--jobs",
        "3",
        "--resources",
        "shared=test/a.test.ts,test/b.test.ts",
        "--exclusive",
        "test/e.test.ts",
      ],
      {
        env: { SG_ALIVE: alive },
      },
    );
    report = readReport(dir);
  });

  test("every file passes (the exclusive one saw no other file alive)", () => {
    expect(run.stderr).toBe("");
    expect(report.shards.map((s) => [s.files[0], s.status])).toEqual(
      ["a", "b", "c", "d", "e", "f"].map((n) => [`test/${n}.test.ts`, "passed"]),
    );
    expect(run.code).toBe(0);
  });

  test("the two holders of the resource never overlap, and the second one waited for it", () => {
    const a = shardOf(report, "test/a.test.ts");
    const b = shardOf(report, "test/b.test.ts");
    expect(overlaps(a, b)).toBe(false);
    expect(span(b).start).toBeGreaterThanOrEqual(span(a).end - 1);
    expect(b.waitedFor).toEqual(["resource shared"]);
    expect(b.waitedMs!).toBeGreaterThan(300);
    expect(run.stdout).toMatch(/START test\/b\.test\.ts \(timeout 1800\.0s\) \(waited \d+\.\d s for resource shared\)/);
  });

  test("the other files kept the pool busy while the resource was taken", () => {
    const a = shardOf(report, "test/a.test.ts");
    for (const f of ["test/c.test.ts", "test/d.test.ts"]) {
      expect(overlaps(shardOf(report, f), a)).toBe(true);
      expect(shardOf(report, f).waitedMs).toBeUndefined();
    }
  });

  test("the exclusive file ran with nothing else alive, last, after the pool drained", () => {
    const e = shardOf(report, "test/e.test.ts");
    for (const other of report.shards.filter((s) => s !== e)) {
      expect(overlaps(e, other)).toBe(false);
      expect(span(other).end).toBeLessThanOrEqual(span(e).start + 1);
    }
    expect(e.exclusive).toBe(true);
    expect(e.waitedFor).toEqual(["the running shards to finish (exclusive)"]);
    expect(run.stdout).toMatch(
      /START test\/e\.test\.ts .*\(waited \d+\.\d s for the running shards to finish \(exclusive\)\)/,
    );
  });

  test("report.json carries each shard's locks and exclusive flag", () => {
    expect(report.shards.map((s) => [s.files[0], s.locks, s.exclusive])).toEqual([
      ["test/a.test.ts", ["shared"], false],
      ["test/b.test.ts", ["shared"], false],
      ["test/c.test.ts", [], false],
      ["test/d.test.ts", [], false],
      ["test/e.test.ts", [], true],
      ["test/f.test.ts", [], false],
    ]);
  });

  test("a run without the settings reports no such field", async () => {
    const plain = makeSuite({ "test/p.test.ts": `import { test } from "bun:test";\ntest("p", () => {});\n` });
    expect((await runCli(["run", "--root", plain])).code).toBe(0);
    const shard = readReport(plain).shards[0]!;
    expect("locks" in shard || "exclusive" in shard || "waitedMs" in shard).toBe(false);
  });
});

describe("SIGINT while a shard waits for its resource", () => {
  test("exit 130; the waiting shard is never-started and its reason says what it was waiting for", async () => {
    const dir = makeSuite({
      "test/a.test.ts": file("a", 20_000),
      "test/b.test.ts": file("b", 100),
      "test/c.test.ts": file("c", 100),
    });
    const alive = tempDir("sg-alive-");
    const run = await runCli(
      ["run", "--root", dir, "--jobs", "2", "--resources", "port-3000=test/a.test.ts,test/b.test.ts", "--grace", "1"],
      {
        env: { SG_ALIVE: alive },
        onLine: {
          match: /PASSED [^\n]*test\/c\.test\.ts/,
          act: (pid) => setTimeout(() => process.kill(pid, "SIGINT"), 200),
        },
      },
    );
    expect(run.code).toBe(130);
    const report = readReport(dir);
    const b = shardOf(report, "test/b.test.ts");
    expect(b.status).toBe("never-started");
    expect(b.reason).toMatch(
      /^run cancelled \(SIGINT\) before this shard started; it was waiting \d+\.\d s for resource port-3000$/,
    );
    expect(b.tests[0]!.failure?.message).toContain("waiting");
    expect(b.waitedFor).toEqual(["resource port-3000"]);
    expect(shardOf(report, "test/c.test.ts").status).toBe("passed");
    expect(survivors(report.runId)).toEqual([]);
  }, 30_000);
});

describe("list, notes and bad input", () => {
  const suite = () =>
    makeSuite({
      "test/a.test.ts": file("a", 1),
      "test/b.test.ts": file("b", 1),
      "test/gen-x.test.ts": file("gen", 1),
      "test/c.test.ts": file("c", 1),
    });

  test(
    "list shows each shard's locks and exclusive flag; " + "--files-per-shard never batches an exclusive file",
    async () => {
      const dir = suite();
      const run = await runCli([
        "list",
        "--root",
        dir,
        "--files-per-shard",
        "2",
        "--exclusive",
        "test/gen-*.test.ts",
        "--resources",
        "docs@2=test/gen-*.test.ts,test/a.test.ts;port=test/c.test.ts",
      ]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("shard 1/3 [test-a-and-1-more]  (locks docs)");
      expect(run.stdout).toContain("shard 2/3 [test-c]  (locks port)");
      expect(run.stdout).toContain("shard 3/3 [test-gen-x]  (exclusive; locks docs)");
    },
  );

  test("with recorded durations, list says the makespan the exclusive file costs", async () => {
    const dir = makeSuite({
      ...Object.fromEntries(["a", "b", "c", "d", "x"].map((n) => [`test/${n}.test.ts`, file(n, 1)])),
      "timings.json": JSON.stringify({
        version: 1,
        files: {
          "test/a.test.ts": 4000,
          "test/b.test.ts": 2000,
          "test/c.test.ts": 2000,
          "test/d.test.ts": 2000,
          "test/x.test.ts": 1000,
        },
      }),
    });
    const run = await runCli([
      "list",
      "--root",
      dir,
      "--jobs",
      "4",
      "--exclusive",
      "test/x.test.ts",
      "--timings",
      path.join(dir, "timings.json"),
    ]);
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain(
      "planned makespan with 4 jobs (recorded durations): 5.0s, 4.0s without exclusive and resources",
    );
  });

  test("--shard I/N: the slice holding the exclusive file lists it exclusive, alone in its shard", async () => {
    const dir = suite();
    const lists = await Promise.all(
      [1, 2].map((i) =>
        runCli([
          "list",
          "--root",
          dir,
          "--shard",
          `${i}/2`,
          "--files-per-shard",
          "3",
          "--exclusive",
          "test/gen-*.test.ts",
        ]),
      ),
    );
    const all = lists.map((r) => r.stdout).join("\n");
    expect(lists.map((r) => r.code)).toEqual([0, 0]);
    expect(all.match(/\(exclusive\)/g)).toHaveLength(1);
    expect(all).toContain("[test-gen-x]  (exclusive)");
  });

  test(
    "a glob that matches no file at all gets one note; " + "one naming a file left out of the plan gets none",
    async () => {
      const dir = suite();
      const run = await runCli([
        "list",
        "--root",
        dir,
        "test/a.test.ts",
        "--resources",
        "docs=test/nope-*.test.ts,test/b.test.ts",
      ]);
      expect(run.code).toBe(0);
      expect(run.stderr.trim().split("\n")).toEqual([
        `shardguard: note: resource docs glob "test/nope-*.test.ts" matches no file under ${dir}`,
      ]);
    },
  );

  const refused: [string, string[], Record<string, string>, string, RegExp][] = [
    [
      "a glob with a syntax error",
      ["--exclusive", "test/[a.test.ts"],
      {},
      "",
      /^shardguard: invalid --exclusive glob "test\/\[a\.test\.ts": Missing closing: "\]"; expected globs/,
    ],
    [
      "capacity 0",
      ["--resources", "db@0=test/a.test.ts"],
      {},
      "",
      /^shardguard: invalid --resources db capacity 0: expected a whole number from 1 to 10000\n$/,
    ],
    [
      "a capacity that is not a whole number (TOML)",
      [],
      {},
      `[shardguard.resources]\ndb = { files = ["test/a.test.ts"], capacity = 1.5 }\n`,
      /^shardguard: invalid bunfig\.toml \[shardguard\] resources\.db capacity 1\.5: expected a whole number/,
    ],
    [
      "an unknown key shape (TOML)",
      [],
      {},
      `[shardguard.resources]\ndb = { globs = ["test/a.test.ts"] }\n`,
      /^shardguard: invalid bunfig\.toml \[shardguard\] resources\.db \{"globs":\["test\/a\.test\.ts"\]\}: expected an array of globs, or \{ files = /,
    ],
    [
      "a resource that is a string (TOML)",
      [],
      {},
      `[shardguard]\nresources = { db = "test/a.test.ts" }\n`,
      /^shardguard: invalid bunfig\.toml \[shardguard\] resources\.db "test\/a\.test\.ts": expected an array of globs/,
    ],
    [
      "an entry without NAME= (environment)",
      [],
      { SHARDGUARD_RESOURCES: "test/a.test.ts" },
      "",
      /^shardguard: invalid SHARDGUARD_RESOURCES "test\/a\.test\.ts": expected NAME\[@CAPACITY\]=GLOB/,
    ],
    [
      "a bad exclusive glob in a preset",
      ["--preset", "mine"],
      {},
      `[shardguard.presets.mine]\nglobs = ["test/*.test.ts"]\nexclusive = ["test/{a.test.ts"]\n`,
      /^shardguard: invalid bunfig\.toml \[shardguard\.presets\.mine\] exclusive glob "test\/\{a\.test\.ts": Missing closing: "\}"/,
    ],
  ];
  for (const [what, args, env, toml, message] of refused) {
    test(`${what}: one line naming the key and what is accepted, exit 2, nothing started`, async () => {
      const dir = makeSuite({ "test/a.test.ts": file("a", 1), ...(toml ? { "bunfig.toml": toml } : {}) });
      const run = await runCli(["run", "--root", dir, ...args], { env });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
    });
  }
});

describe("sources: flag > SHARDGUARD_* > [shardguard] > preset", () => {
  const dir = () =>
    makeSuite({
      ...Object.fromEntries(["a", "b", "c", "d"].map((n) => [`test/${n}.test.ts`, file(n, 1)])),
      "bunfig.toml":
        `[shardguard]\nexclusive = ["test/b.test.ts"]\n\n[shardguard.presets.mine]\nglobs = ` +
        `["test/*.test.ts"]\nexclusive = ["test/a.test.ts"]\nresources = { db = { files = ["test/c.test.ts", ` +
        `"test/d.test.ts"], capacity = 2 } }\n`,
    });
  const exclusiveIn = (stdout: string) => [...stdout.matchAll(/\[(test-[a-d])\] {2}\(exclusive/g)].map((m) => m[1]);

  test("each source wins over those below it, whole (lists are not merged)", async () => {
    const root = dir();
    expect(exclusiveIn((await runCli(["list", "--root", root])).stdout)).toEqual(["test-b"]);
    expect(
      exclusiveIn((await runCli(["list", "--root", root], { env: { SHARDGUARD_EXCLUSIVE: "test/c.test.ts" } })).stdout),
    ).toEqual(["test-c"]);
    expect(
      exclusiveIn(
        (
          await runCli(["list", "--root", root, "--exclusive", "test/d.test.ts"], {
            env: { SHARDGUARD_EXCLUSIVE: "test/c.test.ts" },
          })
        ).stdout,
      ),
    ).toEqual(["test-d"]);
  });

  test("a preset carries both settings, below [shardguard]", async () => {
    const root = dir();
    const run = await runCli(["list", "--root", root, "--preset", "mine"]);
    expect(run.code).toBe(0);
    // [shardguard] exclusive wins over the preset's; the preset's resources stand.
    expect(exclusiveIn(run.stdout)).toEqual(["test-b"]);
    expect(run.stdout).toContain("[test-c]  (locks db)");
  });
});
