/**
 * How a shard that did not end by itself is named: a child stopped by
 * SIGSTOP at the deadline (SIGTERM cannot reach it until SIGCONT), and a
 * child the kernel's OOM killer ended (a SIGKILL shardguard did not send),
 * each checked in report.json, ctrf.json and junit.xml.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CLI, makeSuite, readReport, removeSuites, runCli, withoutCiVariables } from "./helpers/cli.ts";
import { threeReports } from "./helpers/three-reports.ts";

afterAll(removeSuites);

describe("a shard stopped by SIGSTOP at its deadline", () => {
  test("is timed-out with the stop named, not 'SIGTERM was ignored', and SIGCONT lets it act on SIGTERM", async () => {
    const dir = makeSuite({
      "stop.test.ts":
        'import { test } from "bun:test";\ntest("stops itself", () => { process.kill(process.pid, "SIGSTOP"); });\n',
    });
    const run = await runCli(["run", "--root", dir, "--timeout", "2", "--grace", "20"], { limitMs: 60_000 });
    expect(run.code).toBe(1);
    const shard = readReport(dir).shards[0]!;
    expect(shard.status).toBe("timed-out");
    expect(shard.reason).toContain("stopped, e.g. by SIGSTOP, when SIGTERM was sent; SIGCONT followed");
    expect(shard.reason).not.toContain("SIGTERM was ignored");
    // SIGCONT let the child act on SIGTERM: it did not wait out the 20 s grace period for SIGKILL.
    expect(shard.signal).toBe("SIGTERM");
    expect(shard.durationMs).toBeLessThan(15_000);
    const shown = await threeReports(dir);
    for (const tests of [shown.json, shown.ctrf, shown.junit])
      expect(tests.map((t) => t.status)).toEqual(["timed-out"]);
  }, 60_000);
});

/**
 * A memory cgroup with a limit that a process can be moved into (cgroup v1's
 * memory hierarchy, or v2 with the memory controller), or why there is none.
 */
function makeMemoryCgroup(limitBytes: number): { dir: string } | { why: string } {
  if (process.platform !== "linux") return { why: "not Linux" };
  const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
  const v1 = lines.map((l) => l.split(":")).find((f) => f[1]?.split(",").includes("memory"));
  const candidates: { base: string; limitFile: string }[] = [];
  if (v1) candidates.push({ base: path.join("/sys/fs/cgroup/memory", v1[2]!), limitFile: "memory.limit_in_bytes" });
  const v2 = lines.find((l) => l.startsWith("0::"));
  if (v2) candidates.push({ base: path.join("/sys/fs/cgroup", v2.slice(3)), limitFile: "memory.max" });
  for (const { base, limitFile } of candidates) {
    const dir = path.join(base, `sg-oom-${process.pid}`);
    try {
      mkdirSync(dir);
      if (!existsSync(path.join(dir, limitFile))) {
        rmdirSync(dir);
        continue;
      }
      writeFileSync(path.join(dir, limitFile), String(limitBytes));
      return { dir };
    } catch {
      // Not writable here; try the next hierarchy.
    }
  }
  return { why: "no writable memory cgroup (cgroup v1 memory hierarchy or v2 memory controller)" };
}

describe("a shard the kernel's OOM killer ended", () => {
  const cgroup = makeMemoryCgroup(768 * 1024 * 1024);
  const why = "why" in cgroup ? cgroup.why : null;
  if (why !== null) console.warn(`kill-states: OOM test skipped: ${why}`);

  test.skipIf(why !== null)(
    "is crashed with the OOM killer named in its reason and notes",
    async () => {
      const dir = makeSuite({
        "hog.test.ts": [
          'import { test } from "bun:test";',
          'test("allocates without end", () => {',
          "  const kept: Buffer[] = [];",
          "  for (;;) kept.push(Buffer.alloc(32 * 1024 * 1024, 1));",
          "});",
          "",
        ].join("\n"),
      });
      const group = (cgroup as { dir: string }).dir;
      try {
        // The runner itself starts inside the limited cgroup, so its shard (and only that) outgrows it.
        const script =
          `echo $$ > '${group}/cgroup.procs' && exec ` +
          `'${process.execPath}' '${CLI}' run --root '${dir}' --timeout 60`;
        const child = spawn("sh", ["-c", script], {
          env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
          stdio: "ignore",
        });
        const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
        expect(code).toBe(1);
        const shard = readReport(dir).shards[0]!;
        expect(shard.status).toBe("crashed");
        expect(shard.signal).toBe("SIGKILL");
        expect(shard.reason).toContain("a signal shardguard did not send: the kernel's OOM killer ended 1 process");
        expect(shard.notes?.some((n) => n.includes("OOM killer") && n.includes("oom_kill"))).toBe(true);
        const shown = await threeReports(dir);
        for (const tests of [shown.json, shown.ctrf, shown.junit])
          expect(tests.map((t) => t.status)).toEqual(["crashed"]);
      } finally {
        try {
          rmdirSync(group);
        } catch {
          // Still populated for a moment after the run.
        }
      }
    },
    90_000,
  );
});
