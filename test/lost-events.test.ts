/**
 * A shard whose last inspector events are lost, with real children: 40 quick
 * passing tests (20 at the top level, 20 rows of a `test.each` table inside a
 * describe), then a test that kills its own process group (`process.kill(0,
 * "SIGKILL")`) inside a nested describe, then three tests after it. Bun loses
 * the tail of its event queue when the process dies, more or less of it each
 * run; the preload's start count, the `found` plan (which the plan barrier
 * delivers, runner/exec/start-acks.ts) and Bun's run order must still give,
 * in all three reports: every test, none of them passed without its `end`,
 * the culprit in flight, the three after it never-started. Each shape runs a
 * few times here (two at a time); LOST_EVENTS_ROUNDS=N runs each N times
 * (for a check by hand under load). docs/reports.md has the rule.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { threeReports, type ShownTest } from "./helpers/three-reports.ts";
import { bunBinary } from "./helpers/bun-versions.ts";

afterAll(removeSuites);

/** Runs of each shape; 0 (unset): the counts below. */
const ROUNDS = Number(process.env.LOST_EVENTS_ROUNDS ?? "0") || 0;
const rounds = (n: number) => ROUNDS || n;

const CULPRIT = "table > inner > kills its group";
const AFTER = ["table > inner > after it, inside", "table > after it, in the table", "after it, at the top level"];
const range = <T>(n: number, item: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => item(i));
const QUICK = [...range(20, (i) => `quick pass ${i}`), ...range(20, (i) => `table > row ${i}`)];

const GROUP_KILL = `import { describe, expect, test } from "bun:test";
for (let i = 0; i < 20; i++) test(\`quick pass \${i}\`, () => expect(i).toBe(i));
describe("table", () => {
  test.each(Array.from({ length: 20 }, (_, i) => i))("row %p", (i) => expect(i).toBe(i));
  describe("inner", () => {
    test("kills its group", () => { process.kill(0, "SIGKILL"); });
    test("after it, inside", () => {});
  });
  test("after it, in the table", () => {});
});
test("after it, at the top level", () => {});
`;
const SUITE = { "group-kill.test.ts": GROUP_KILL };

/** One report's entries of the group-kill file: every test once, the culprit in flight, nothing unproven passed. */
function checkGroupKill(shown: ShownTest[], format: string): void {
  const names = [...QUICK, CULPRIT, ...AFTER].sort();
  expect({ format, names: shown.map((t) => t.name).sort() }).toEqual({ format, names });
  const by = new Map(shown.map((t) => [t.name, t]));
  const quick = QUICK.map((name) => [format, name, by.get(name)!.status]);
  expect(quick.filter(([, , status]) => status !== "passed" && status !== "crashed")).toEqual([]);
  expect([format, by.get(CULPRIT)!.status]).toEqual([format, "crashed"]);
  expect(by.get(CULPRIT)!.message).toStartWith("in flight when the shard ended");
  expect(AFTER.map((name) => [format, by.get(name)!.status])).toEqual(AFTER.map(() => [format, "never-started"]));
  // A quick test without its end event is crashed with an unknown outcome, never passed and never in flight.
  const lost = shown.filter((t) => QUICK.includes(t.name) && t.status === "crashed");
  for (const t of lost) expect(t.message).toContain("its outcome is unknown");
}

/** Runs `files` once with `args` and checks the group-kill file in all three reports. */
async function runOnce(files: Record<string, string>, args: string[]) {
  const dir = makeSuite(files, "sg-lost-events-");
  const run = await runCli(["run", "--root", dir, ...args], { limitMs: 90_000 });
  expect(run.code).toBe(1);
  const shard = readReport(dir).shards.find((s) => s.files.includes("group-kill.test.ts"))!;
  expect([shard.status, shard.reason]).toEqual(["crashed", "killed by SIGKILL, a signal shardguard did not send"]);
  const reports = await threeReports(dir);
  // The other file of a batch has names of its own: each report's entries of this file are found by name.
  const own = new Set(shard.tests.filter((t) => t.file === "group-kill.test.ts").map((t) => t.name));
  for (const [format, shown] of Object.entries(reports))
    checkGroupKill(
      shown.filter((t) => own.has(t.name)),
      format,
    );
  return {
    passed: reports.json.filter((t) => QUICK.includes(t.name) && t.status === "passed").length,
    others: reports.json.filter((t) => !own.has(t.name)),
  };
}

/** `n` runs, two at a time; by hand (LOST_EVENTS_ROUNDS), prints how many quick tests kept their end event. */
async function runs(n: number, files: Record<string, string>, args: string[], label = args.join(" ")) {
  const out: Awaited<ReturnType<typeof runOnce>>[] = [];
  for (let i = 0; i < n; i += 2) {
    out.push(...(await Promise.all([runOnce(files, args), ...(i + 1 < n ? [runOnce(files, args)] : [])])));
  }
  const passed = out.map((r) => r.passed).join(" ");
  if (ROUNDS) console.log(`${label || "(no flags)"}: quick tests passed per run: ${passed}`);
  return out;
}

describe("a shard whose last events are lost reports every test Bun started", () => {
  test("40 quick tests, a group kill: all 44 in every report, culprit in flight, 3 after it not started", async () => {
    for (const r of await runs(rounds(4), SUITE, [])) expect(r.passed).toBeLessThanOrEqual(40);
  }, 240_000);

  test("the same under -- --retry 1", async () => {
    await runs(rounds(2), SUITE, ["--", "--retry", "1"]);
  }, 180_000);

  test("a batch of two files (--files-per-shard 2): the count spans both, the first file keeps its own", async () => {
    const first = `import { test } from "bun:test";\nfor (let i = 0; i < 5; i++) test(\`first \${i}\`, () => {});\n`;
    for (const r of await runs(rounds(2), { "a-first.test.ts": first, ...SUITE }, ["--files-per-shard", "2"])) {
      // Every event of the first file came before the second file's first start, which the plan barrier waits for.
      expect(r.others.map((t) => [t.name, t.status])).toEqual(range(5, (i) => [`first ${i}`, "passed"]));
    }
  }, 180_000);

  for (const version of ["1.3.13", "1.4.5"]) {
    test(`on Bun ${version}, with and without --retry 1`, async () => {
      const bun = await bunBinary(version);
      await Promise.all([
        runs(rounds(2) / 2, SUITE, ["--bun", bun], `Bun ${version}`),
        runs(rounds(2) / 2, SUITE, ["--bun", bun, "--", "--retry", "1"], `Bun ${version} --retry 1`),
      ]);
    }, 180_000);
  }

  test("concurrent tests: each started one without an end is crashed, the test after them never-started", async () => {
    const file = `import { test } from "bun:test";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
for (let i = 0; i < 5; i++) test.concurrent(\`slow \${i}\`, async () => { await sleep(2000); });
test.concurrent("kills its group", async () => { await sleep(200); process.kill(0, "SIGKILL"); });
test("after it", () => {});
`;
    const dir = makeSuite({ "concurrent.test.ts": file }, "sg-lost-events-");
    expect((await runCli(["run", "--root", dir], { limitMs: 90_000 })).code).toBe(1);
    for (const [format, shown] of Object.entries(await threeReports(dir))) {
      expect([format, shown.map((t) => [t.name, t.status])]).toEqual([
        format,
        [...range(5, (i) => [`slow ${i}`, "crashed"]), ["kills its group", "crashed"], ["after it", "never-started"]],
      ]);
    }
  }, 60_000);
});

describe("what a test can forge on its inspector connection (docs/reports.md)", () => {
  const FORGE = `import { test } from "bun:test";
import { readdirSync, readlinkSync, writeSync } from "node:fs";
/** Writes a passing TestReporter.end for test \`id\` on every socket of this process: the inspector's is one. */
function forgeEnd(id: number): void {
  if (process.env.FORGE_STARTS) send({ method: "TestReporter.start", params: { id } });
  send({ method: "TestReporter.end", params: { id, status: "pass", elapsed: 1000 } });
}
function send(event: object): void {
  const json = Buffer.from(JSON.stringify(event));
  const frame = Buffer.alloc(4 + json.length);
  frame.writeUInt32BE(json.length, 0);
  json.copy(frame, 4);
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(\`/proc/self/fd/\${fd}\`).startsWith("socket:")) writeSync(Number(fd), frame);
    } catch {}
  }
}
test("forger", () => {
  // Bun's own events first (the plan, this test's start), then the forged ends, then the kill.
  Bun.sleepSync(1000);
  for (const id of [2, 3, 4]) forgeEnd(id);
  Bun.sleepSync(300);
  process.kill(0, "SIGKILL");
});
test("victim 1", () => {});
test("victim 2", () => {});
test("victim 3", () => {});
`;

  test("passing end events forged for tests that never started: never-started, not passed", async () => {
    const dir = makeSuite({ "forge.test.ts": FORGE }, "sg-lost-events-");
    expect((await runCli(["run", "--root", dir], { limitMs: 90_000 })).code).toBe(1);
    const victims = range(3, (i) => [`victim ${i + 1}`, "never-started"]);
    for (const [format, shown] of Object.entries(await threeReports(dir))) {
      expect([format, shown.map((t) => [t.name, t.status])]).toEqual([format, [["forger", "crashed"], ...victims]]);
      expect(shown[1]!.message).toStartWith("never started: its passing end event came without a start event");
    }
  }, 60_000);

  test("forged start and end pairs: more starts than the preload counted, so no pass of the shard stands", async () => {
    const dir = makeSuite({ "forge.test.ts": FORGE }, "sg-lost-events-");
    expect((await runCli(["run", "--root", dir], { limitMs: 90_000, env: { FORGE_STARTS: "1" } })).code).toBe(1);
    const victims = range(3, (i) => [`victim ${i + 1}`, "crashed"]);
    for (const [format, shown] of Object.entries(await threeReports(dir))) {
      expect([format, shown.map((t) => [t.name, t.status])]).toEqual([format, [["forger", "crashed"], ...victims]]);
      expect(shown[1]!.message).toContain("carried more test starts than the child preload counted");
    }
  }, 60_000);
});
