/**
 * A test deletes or replaces the output directory while other files are
 * queued (issue 33, item 3): the runner makes again what the shards to come
 * need, a shard it could not start is never-started with the reason, a
 * shard that ran keeps the verdict its surviving evidence gives (marks read
 * through the runner's descriptors, events from memory, the log put back),
 * and the final reports are written, checked in all three formats.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { bunBinary, SUPPORTED_BUNS } from "./helpers/bun-versions.ts";
import { threeReports } from "./helpers/three-reports.ts";
import { LOG_DELETED_AFTER } from "../runner/engine/run-dirs.ts";
import { marksDeleted, prepareMarks, readMarks, releaseMarks } from "../runner/exec/marks.ts";
import { SHARD_PRELOAD } from "../runner/exec/bun-command.ts";
import { decideShard, type EventTest, type ShardEvidence } from "../runner/results/verdict.ts";
import type { RunReport } from "../runner/results/report-model.ts";

afterAll(removeSuites);

const NAMES = ["a", "b", "c", "d", "e", "f", "g"];
const DELETED = "the run's directory under the output directory was deleted while the shard ran";
const UNKNOWN_END =
  "exited 0, but whether Bun reached the end of the run is unknown: its end mark went with the deleted run directory";

/** Seven files of one 300 ms test each; c runs `act` (JavaScript, cwd the root) 100 ms into its test. */
function suite(act: string): string {
  const files: Record<string, string> = {};
  for (const name of NAMES) {
    const body = name === "c" ? `await Bun.sleep(100); ${act}; await Bun.sleep(200);` : "await Bun.sleep(300);";
    files[`${name}.test.ts`] = [
      'import { mkdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";',
      'import { test } from "bun:test";',
      `test("${name}", async () => { ${body} });`,
      "",
    ].join("\n");
  }
  return makeSuite(files);
}

const REMOVE_OUT = 'rmSync(".shardguard", { recursive: true, force: true })';

/**
 * The status of each file's one entry (a test, or a synthetic entry for the whole file), by
 * file name without `.test.ts`, the same in junit.xml, report.json and ctrf.json.
 */
async function statuses(dir: string): Promise<Record<string, string>> {
  const { json, ctrf, junit } = await threeReports(dir);
  const shards = readReport(dir).shards;
  expect(shards.map((s) => s.tests.length)).toEqual(NAMES.map(() => 1));
  const flat = (list: { name: string; status: string }[]) => list.map((t) => `${t.name}: ${t.status}`);
  expect(flat(ctrf)).toEqual(flat(json));
  expect(flat(junit)).toEqual(flat(json));
  return Object.fromEntries(shards.map((s, i) => [s.files[0]!.slice(0, -".test.ts".length), json[i]!.status]));
}

/**
 * Each shard's log is at its logPath with the shard's output, or, for a shard that ended
 * before the deletion, said to be lost; c's (put back) and those of the files queued then are there.
 */
function expectLogsThereOrNoted(report: RunReport): void {
  for (const shard of report.shards) {
    const name = shard.files[0]!.slice(0, 1);
    if (!existsSync(shard.logPath!)) {
      expect(["a", "b"]).toContain(name);
      expect(shard.logIncomplete).toBe(true);
      expect(shard.notes).toContain(LOG_DELETED_AFTER);
      continue;
    }
    expect(shard.logIncomplete).toBe(false);
    expect(readFileSync(shard.logPath!, "utf8")).toContain(`(pass) ${name}`);
  }
}

describe("rm -rf .shardguard by a test while other files are queued (jobs 2, seven files)", () => {
  for (const version of SUPPORTED_BUNS) {
    test(`events on, Bun ${version}: all pass, those it ran under by their evidence; logs kept or noted`, async () => {
      const dir = suite(REMOVE_OUT);
      const r = await runCli(["run", "--root", dir, "--jobs", "2", "--bun", await bunBinary(version)]);
      expect(await statuses(dir)).toEqual(Object.fromEntries(NAMES.map((n) => [n, "passed"])));
      const warning = / was deleted during the run \(a test removed it\?\): made again for the shards to come$/m;
      expect(r.stdout).toMatch(new RegExp(`^shardguard: WARNING .*${warning.source}`, "m"));
      expect(r.code).toBe(0);
      const report = readReport(dir);
      // c itself ran through the deletion, and passed on its evidence.
      const c = report.shards.find((s) => s.files[0] === "c.test.ts")!;
      expect(c.notes?.some((n) => n.startsWith(DELETED))).toBe(true);
      const putBack = "the shard's log was deleted while it ran (a test removed the output directory?): put back whole";
      expect(c.notes).toContain(`${putBack} from the runner's descriptor`);
      expectLogsThereOrNoted(report);
    }, 60_000);
  }

  test("events off: a shard it ran under never passes without its JUnit, and says why; queued ones pass", async () => {
    const dir = suite(REMOVE_OUT);
    const r = await runCli(["run", "--root", dir, "--jobs", "2", "--no-test-events"]);
    const shown = await statuses(dir);
    const report = readReport(dir);
    for (const shard of report.shards) {
      if (shard.status === "passed") continue;
      // Bun reached its end (the marks, read through the runner's descriptor) but had nowhere to write its JUnit.
      expect(shard.status).toBe("crashed");
      expect(shard.reason).toBe(
        `exited 0 after reaching the end of the run, but Bun wrote no JUnit report: ${DELETED} (a test removed it?): ` +
          "per-test results are the events' where they have them",
      );
      expect(shard.tests.map((t) => t.name)).toEqual(["(whole file)"]);
    }
    // The files queued at the deletion started after it, in directories made again.
    for (const name of ["e", "f", "g"]) expect(shown[name]).toBe("passed");
    expect(r.code).toBe(shown.c === "passed" && shown.d === "passed" ? 0 : 1);
    expectLogsThereOrNoted(report);
  }, 60_000);
});

test("the logs directory replaced by a file: queued shards never start, saying why; running ones pass", async () => {
  // OUT/logs points at runs/<id>/logs: that directory becomes a file.
  const replace = 'rmSync(logs, { recursive: true, force: true }); writeFileSync(logs, "x")';
  const dir = suite(`const logs = ".shardguard/" + readlinkSync(".shardguard/logs"); ${replace}`);
  const r = await runCli(["run", "--root", dir, "--jobs", "2"]);
  expect(r.code).toBe(1);
  const shown = await statuses(dir);
  const report = readReport(dir);
  for (const shard of report.shards) {
    const name = shard.files[0]!.slice(0, 1);
    if (shard.status === "never-started") {
      expect(shard.reason).toMatch(/^shardguard could not start it: (ENOTDIR|EEXIST)\b.*\/logs'?$/);
      expect(shown[name]).toBe("never-started");
      continue;
    }
    expect(shard.status).toBe("passed");
    if (name === "c") {
      // Its log went with the directory and cannot be put back where a file now is.
      expect(shard.logIncomplete).toBe(true);
      const lost = /^the shard's log was deleted while it ran .* and could not be put back \(.*\): its output is lost$/;
      expect(shard.notes?.some((n) => lost.test(n))).toBe(true);
    }
  }
  for (const name of ["e", "f", "g"]) expect(shown[name]).toBe("never-started");
  expect(r.stdout).not.toContain("could not supervise");
}, 60_000);

describe("marks read through the runner's descriptors (exec/marks.ts)", () => {
  /** A marks file and start count as the child preload writes them: a file sink and a mapping, opened at once. */
  function childWrites(marks: string): { write(text: string): void; count(n: number): void } {
    const sink = Bun.file(marks).writer();
    const mapped = new Uint32Array(Bun.mmap(`${marks}.count`).buffer, 0, 1);
    return {
      write: (text) => {
        sink.write(text);
        sink.flush();
      },
      count: (n) => (mapped[0] = n),
    };
  }

  test("a marks directory deleted after the child opened its files reads whole; by path, as nothing", async () => {
    const dir = makeSuite({});
    const marks = path.join(dir, "junit", "shard-1.marks");
    mkdirSync(path.dirname(marks));
    const held = prepareMarks(marks);
    const child = childWrites(marks);
    child.write("f/x.test.ts\0");
    rmSync(path.dirname(marks), { recursive: true });
    child.count(3);
    child.write("e");
    expect(marksDeleted(held)).toBe(true);
    const none = { testsStarted: 0, finishedNormally: false, descendants: [], filesStarted: [], filesLoaded: 0 };
    const all = { ...none, testsStarted: 3, finishedNormally: true, filesStarted: ["/x.test.ts"] };
    expect(await readMarks(marks, held)).toEqual(all);
    expect(await readMarks(marks)).toEqual(none);
    releaseMarks(held);
  });

  test("a path made again after the deletion is read too (an --isolate batch appends by path)", async () => {
    const dir = makeSuite({});
    const marks = path.join(dir, "junit", "shard-1.marks");
    mkdirSync(path.dirname(marks));
    const held = prepareMarks(marks);
    appendFileSync(marks, "lf/a.test.ts\0");
    expect(marksDeleted(held)).toBe(false);
    expect((await readMarks(marks, held)).filesStarted).toEqual(["/a.test.ts"]);
    rmSync(path.dirname(marks), { recursive: true });
    mkdirSync(path.dirname(marks));
    appendFileSync(marks, "lf/b.test.ts\0e");
    writeFileSync(`${marks}.count`, Buffer.from([2, 0, 0, 0]));
    const files = ["/a.test.ts", "/b.test.ts"];
    const both = { testsStarted: 2, finishedNormally: true, filesStarted: files, filesLoaded: 2 };
    expect(await readMarks(marks, held)).toEqual({ ...both, descendants: [] });
    releaseMarks(held);
  });
});

test("the child preload runs the tests when its marks directory is gone as it starts (a test deleted it)", () => {
  const dir = makeSuite({ "a.test.ts": 'import { test } from "bun:test";\ntest("a", () => {});\n' });
  const run = spawnSync(process.execPath, ["test", "--preload", SHARD_PRELOAD, path.join(dir, "a.test.ts")], {
    cwd: dir,
    env: { ...process.env, SHARDGUARD_MARKS: path.join(dir, "gone", "shard-1.marks") },
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(run.stderr).toContain("1 pass");
  expect(run.status).toBe(0);
}, 30_000);

test("--isolate batches (marks appended by path): a batch it ran under never passes, no hook is made up", async () => {
  const dir = suite(REMOVE_OUT);
  const r = await runCli(["run", "--root", dir, "--jobs", "2", "--files-per-shard", "3", "--", "--isolate"]);
  const { json, ctrf, junit } = await threeReports(dir);
  const flat = (list: { name: string; status: string }[]) => list.map((t) => `${t.name}: ${t.status}`);
  expect(flat(ctrf)).toEqual(flat(json));
  expect(flat(junit)).toEqual(flat(json));
  // Every test ran and passed by its events; what only the lost end mark or JUnit could say stands apart.
  const ran = json.filter((t) => t.name.length === 1).map((t) => `${t.name}: ${t.status}`);
  expect(ran).toEqual(NAMES.map((n) => `${n}: passed`));
  const report = readReport(dir);
  for (const shard of report.shards) {
    expect(shard.tests.map((t) => t.name)).not.toContain("afterAll hook");
    expect(shard.reason).not.toContain("process.exit");
    if (shard.status === "passed") continue;
    expect(shard.status).toBe("crashed");
    expect(shard.reason.startsWith(UNKNOWN_END) || shard.reason.includes(DELETED)).toBe(true);
    expect(shard.tests.filter((t) => t.status === "crashed").map((t) => t.name)).toEqual(["(Bun's JUnit report)"]);
  }
  expect(r.code).toBe(report.shards.every((s) => s.status === "passed") ? 0 : 1);
}, 60_000);

test("verdict: exit 0, no end mark, the marks file deleted: crashed, its end unknown, tests as events say", () => {
  const tests: EventTest[] = ["t1", "t2"].map((name) => ({
    name,
    file: "a.test.ts",
    state: "ended",
    status: "passed",
    attempts: 1,
    durationMs: 5,
    attemptFailures: [],
  }));
  const events = { connected: true, looseErrors: [], tests };
  const evidence: ShardEvidence = {
    index: 1,
    slug: "a",
    files: ["a.test.ts"],
    junit: null,
    events,
    process: {
      started: true,
      exitCode: 0,
      signal: null,
      killedBy: null,
      escalated: false,
      durationMs: 9,
      startedAt: null,
    },
    passWithNoTests: false,
    timeoutMs: 3000,
    graceMs: 1000,
    logPath: "/logs/a.log",
    logIncomplete: false,
    testsStarted: 2,
    finishedNormally: false,
    junitProblem: "Bun wrote no JUnit report: gone",
  };
  const result = decideShard({ ...evidence, marksDeleted: true });
  expect(result.status).toBe("crashed");
  expect(result.reason).toBe(`${UNKNOWN_END} (Bun wrote no JUnit report: gone)`);
  const entries = [
    ["t1", "passed"],
    ["t2", "passed"],
    ["(Bun's JUnit report)", "crashed"],
  ];
  expect(result.tests.map((t) => [t.name, t.status])).toEqual(entries);
  // The same without the deletion: an early exit, its afterAll hook in flight.
  expect(decideShard(evidence).tests.map((t) => t.name)).toContain("afterAll hook");
});
