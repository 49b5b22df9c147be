/**
 * Two kinds of process that outlived every sweep once (issue 25, item 3),
 * made by real C programs compiled here with `cc`:
 *
 * - leader-exits: fork, setsid, fork; the grandchild starts a thread and its
 *   leader thread calls pthread_exit. `/proc/<pid>/stat` says Z ("Zl" in ps)
 *   and `/proc/<pid>/environ` fails with ESRCH, yet the worker thread runs.
 * - fork-relay: in its own session, each process forks its successor and
 *   exits every ~200 µs, so every pid a scan lists is gone when it is read.
 *
 * Liveness is judged here from /proc without the runner's code: a process
 * is alive while one of its threads is not a zombie; a group while one
 * member is. Whatever the runner leaves, the clean-up below kills it, so a
 * failing run never leaves a relay eating the machine's pids.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { sweepCookie } from "../runner/exec/process.ts";
import { makeSuite, readReport, removeSuites, REPO, runCli, shardOf, waitFor, tempDir } from "./helpers/cli.ts";

const SOURCES = path.join(REPO, "test", "fixtures", "escapees");
let bin = "";
/** Pids and groups to kill after the tests, whatever the runner did. */
const toKill: { pids: number[]; groups: number[] } = { pids: [], groups: [] };

beforeAll(() => {
  bin = tempDir("sg-escapees-");
  for (const [name, flags] of [
    ["leader-exits", ["-pthread"]],
    ["fork-relay", []],
  ] as const) {
    const cc = spawnSync("cc", ["-O1", ...flags, "-o", path.join(bin, name), path.join(SOURCES, `${name}.c`)], {
      encoding: "utf8",
    });
    if (cc.status !== 0) throw new Error(`cc ${name}.c failed: ${cc.stderr}`);
  }
});

afterAll(() => {
  for (const group of toKill.groups) signal(-group);
  for (const pid of toKill.pids) signal(pid);
  rmSync(bin, { recursive: true, force: true });
  removeSuites();
});

function signal(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone.
  }
}

/** The state letter of a task's stat, or null when it is gone. */
function state(statPath: string): string | null {
  try {
    const text = readFileSync(statPath, "utf8");
    return text.slice(text.lastIndexOf(")") + 2, text.lastIndexOf(")") + 3);
  } catch {
    return null;
  }
}

/** True while a thread of `pid` is neither a zombie nor dead. */
function processAlive(pid: number): boolean {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return false;
  }
  return tids.some((tid) => !["Z", "X", null].includes(state(`/proc/${pid}/task/${tid}/stat`)));
}

/**
 * True when a live member of process group `pgid` is seen within 150 ms
 * (zombies awaiting their reaper do not count). A relay's member lives a
 * few hundred microseconds, so one listing of /proc may miss it: the pids
 * allocated last are read by number too, and both again and again.
 */
function groupAlive(pgid: number): boolean {
  const live = (pid: number) => {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      return Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X";
    } catch {
      return false;
    }
  };
  const until = performance.now() + 150;
  while (performance.now() < until) {
    const last = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));
    for (let pid = last + 1; pid > last - 8; pid--) if (live(pid)) return true;
    for (const name of readdirSync("/proc")) if (/^\d+$/.test(name) && live(Number(name))) return true;
  }
  return false;
}

/** A test file that starts `program` (which writes a pid or group id to `idFile`) and passes. */
function starter(program: string, idFile: string): string {
  return (
    'import { expect, test } from "bun:test";\n' +
    'test("starts a process that escapes", async () => {\n' +
    `  const run = Bun.spawnSync([${JSON.stringify(path.join(bin, program))}, ` +
    `\`\${import.meta.dir}/${idFile}\`], { stdio: ["ignore", "ignore", "ignore"] });\n` +
    "  expect(run.exitCode).toBe(0);\n" +
    "  await Bun.sleep(200);\n" +
    "});\n"
  );
}

describe("processes that escaped the group and used to survive the sweeps", () => {
  // The relay survived 3 of 6 runs before: three runs here, each must kill it.
  for (const round of [1, 2, 3]) {
    test(`run ${round}: a zombie leader with a live thread and a ` +
      `fork relay are gone 3 s after the run and listed in leftovers`, async () => {
      const dir = makeSuite({
        "leader.test.ts": starter("leader-exits", "leader.pid"),
        "relay.test.ts": starter("fork-relay", "relay.pgid"),
      });
      const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "30"]);
      const leader = Number(readFileSync(path.join(dir, "leader.pid"), "utf8"));
      const relay = Number(readFileSync(path.join(dir, "relay.pgid"), "utf8"));
      toKill.pids.push(leader);
      toKill.groups.push(relay);
      expect(run.code).toBe(0);
      expect(await waitFor(() => !processAlive(leader) && !groupAlive(relay), 3_000)).toBe(true);

      const report = readReport(dir);
      const leaderShard = shardOf(report, "leader.test.ts");
      const relayShard = shardOf(report, "relay.test.ts");
      expect([leaderShard.status, relayShard.status]).toEqual(["passed", "passed"]);
      expect(leaderShard.leftovers).toContainEqual({
        pid: leader,
        command: expect.stringContaining("leader-exits"),
        leftGroup: true,
      });
      // The relay changes pid all the time: the listed ones are members of its group.
      expect(relayShard.leftovers.length).toBeGreaterThan(0);
      expect(relayShard.leftovers.every((e) => e.leftGroup)).toBe(true);
      expect(relayShard.leftovers.some((e) => e.command.includes("fork-relay"))).toBe(true);
      // The shards passed in every report: a leftover never changes a status.
      const junit = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
      expect(junit).toMatch(/<testsuites [^>]*tests="2"[^>]*failures="0"[^>]*errors="0"/);
      const ctrf = JSON.parse(readFileSync(path.join(dir, ".shardguard", "ctrf.json"), "utf8"));
      expect(ctrf.results.summary).toMatchObject({ tests: 2, passed: 2, failed: 0 });
    }, 60_000);
  }
});

describe("sweepCookie", () => {
  test(
    "kills a fork relay and a zombie leader's live thread " + "carrying the cookie, in passes until none is new",
    async () => {
      const dir = makeSuite({});
      const cookie = `SG_ESCAPEE_TEST=${process.pid}-${Date.now()}`;
      const env = { ...process.env, SG_ESCAPEE_TEST: cookie.split("=")[1] };
      for (const [program, file] of [
        ["leader-exits", "leader.pid"],
        ["fork-relay", "relay.pgid"],
      ] as const) {
        expect(spawnSync(path.join(bin, program), [path.join(dir, file)], { env, stdio: "ignore" }).status).toBe(0);
      }
      const leader = Number(await waitFor(() => readOr(path.join(dir, "leader.pid")), 2_000));
      const relay = Number(await waitFor(() => readOr(path.join(dir, "relay.pgid")), 2_000));
      toKill.pids.push(leader);
      toKill.groups.push(relay);
      expect(processAlive(leader)).toBe(true);
      expect(groupAlive(relay)).toBe(true);

      const killed = sweepCookie(cookie, "exact");
      expect(killed.map((e) => e.pid)).toContain(leader);
      expect(killed.some((e) => e.command.includes("fork-relay"))).toBe(true);
      expect(await waitFor(() => !processAlive(leader) && !groupAlive(relay), 3_000)).toBe(true);
      expect(sweepCookie(cookie, "exact")).toEqual([]);
    },
  );
});

function readOr(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
