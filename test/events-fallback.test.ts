/**
 * A shard child whose inspector never dials the runner's socket, through
 * the real CLI. The runner listens before the spawn; a child that never
 * connects either ends first (its inspector failed to start: Bun 1.4.4
 * prints "Failed to start inspector" and exits 1 before any test) or waits
 * for a debugger forever. Both must end as before the reverse connect: a
 * WARNING line, the child stopped, the shard run again without events, its
 * verdict from the exit status and Bun's JUnit, and "per-test data missing"
 * in the reason unless it passed (docs/architecture.md, "One shard end to
 * end"). The `--bun` setting points the runner at a wrapper standing in
 * for such a Bun; without events it runs the real one.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli, shardOf } from "./helpers/cli.ts";

afterAll(removeSuites);

const SUITE = {
  "t/mixed.test.ts":
    `import { expect, test } from "bun:test";\n` +
    `test("passes", () => expect(1).toBe(1));\ntest("fails", () => expect(1).toBe(2));\n`,
  "t/fine.test.ts": `import { expect, test } from "bun:test";\ntest("fine", () => expect(2).toBe(2));\n`,
};

/**
 * A `bun` stand-in: told to dial the runner's socket (`BUN_INSPECT_CONNECT_TO`
 * in its environment, exec/bun-command.ts `inspectorEnv`) it either fails as
 * Bun does when its inspector cannot start (`fail`), or runs the real Bun
 * told to dial a socket nobody listens on (`wait`); otherwise it runs the
 * real Bun unchanged.
 */
function wrapper(dir: string, mode: "fail" | "wait"): string {
  const file = path.join(dir, `bun-${mode}.sh`);
  const onInspect =
    mode === "fail"
      ? `echo "Failed to start inspector" >&2; exit 1`
      : `BUN_INSPECT_CONNECT_TO="unix://${path.join(dir, "nobody-listens.sock")}"; export BUN_INSPECT_CONNECT_TO`;
  writeFileSync(
    file,
    `#!/bin/sh
` +
      `if [ -n "$BUN_INSPECT_CONNECT_TO" ]; then ${onInspect}; fi
` +
      `exec "${process.execPath}" "$@"
`,
  );
  chmodSync(file, 0o755);
  return file;
}

/** Sizes of the shard event journals of the run in `out`. */
function journalSizes(out: string): number[] {
  const runs = path.join(out, "runs");
  const logs = path.join(runs, readdirSync(runs)[0]!, "logs");
  return readdirSync(logs)
    .filter((f) => f.endsWith(".events.jsonl"))
    .map((f) => statSync(path.join(logs, f)).size);
}

describe("a shard child that never dials the runner's inspector socket", () => {
  test(
    "its inspector fails to start (the child exits first): WARNING, " +
      "run again without events, verdict from exit status and Bun's JUnit",
    async () => {
      const dir = makeSuite(SUITE);
      const out = path.join(dir, ".shardguard");
      const r = await runCli(["run", "--root", dir, "--out", out, "--jobs", "2", "--bun", wrapper(dir, "fail"), "t"]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        /WARNING no per-test events \(the child exited before the inspector handshake completed\); running it again without them/,
      );
      const report = readReport(dir);
      const mixed = shardOf(report, "t/mixed.test.ts");
      expect(mixed.status).toBe("failed");
      expect(mixed.tests.map((t) => [t.name, t.status])).toEqual([
        ["passes", "passed"],
        ["fails", "failed"],
      ]);
      expect(mixed.testSource).toBe("junit");
      expect(mixed.reason).toContain(
        "per-test data missing (the child exited before the inspector handshake completed)",
      );
      expect(mixed.notes).toEqual([
        "no inspector events (the child exited before the inspector handshake " +
          "completed): retries, flakiness and the test in flight are unknown",
      ]);
      const fine = shardOf(report, "t/fine.test.ts");
      expect([fine.status, fine.tests.map((t) => t.status)]).toEqual(["passed", ["passed"]]);
      // The failed attempt's output stays in the log, before the second run's.
      const log = readFileSync(mixed.logPath!, "utf8");
      expect(log).toContain("Failed to start inspector");
      expect(log).toContain("(fail) fails");
      expect(journalSizes(out)).toEqual([0, 0]);
    },
  );

  test("its inspector waits and never dials: stopped after the connect budget, run again without events", async () => {
    const dir = makeSuite({ "t/fine.test.ts": SUITE["t/fine.test.ts"] });
    const out = path.join(dir, ".shardguard");
    // The first report does not wait for that handshake: 1 s after the start it is on disk.
    let early = null as string | null;
    const r = await runCli(["run", "--root", dir, "--out", out, "--bun", wrapper(dir, "wait"), "t"], {
      limitMs: 30_000,
      onLine: {
        match: /START t\/fine\.test\.ts/,
        act: () =>
          setTimeout(() => {
            try {
              early = readFileSync(path.join(out, "report.json"), "utf8");
            } catch {
              early = "";
            }
          }, 1_000),
      },
    });
    expect(early).toContain('"reason": "still running when this report was written"');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /WARNING no per-test events \(inspector handshake on \S+ failed after \d+ ms \(timeout 5000 ms\): the child never connected/,
    );
    const fine = shardOf(readReport(dir), "t/fine.test.ts");
    expect([fine.status, fine.testSource, fine.tests.map((t) => [t.name, t.status])]).toEqual([
      "passed",
      "junit",
      [["fine", "passed"]],
    ]);
    // A shard whose events were lost says so, passed or not.
    expect(fine.notes).toEqual([
      expect.stringMatching(
        /^no inspector events \(inspector handshake on \S+ failed after \d+ ms \(timeout 5000 ms\): the child never connected.*\): retries, flakiness and the test in flight are unknown$/,
      ),
    ]);
    expect(r.ms).toBeGreaterThanOrEqual(5_000);
  }, 30_000);
});

describe("a test that removes the run's socket directory (its path is in the test's own starting environment)", () => {
  test("later shards still get their events: the directory is made again, private, before each listen", async () => {
    // The preload deletes the variable from process.env; /proc/self/environ keeps the start's.
    const remover =
      `import { expect, test } from "bun:test";\n` +
      `import { readFileSync, rmSync } from "node:fs";\nimport path from "node:path";\n` +
      `test("removes the socket dir", () => {\n` +
      `  const v = readFileSync("/proc/self/environ", "utf8").split("\\0").find((a) ` +
      `=> a.startsWith("BUN_INSPECT_CONNECT_TO=unix://"))!;\n` +
      `  rmSync(path.dirname(v.slice("BUN_INSPECT_CONNECT_TO=unix://".length)), { recursive: true, force: true });\n` +
      `  expect(1).toBe(1);\n});\n`;
    const dir = makeSuite({ "t/a-remove.test.ts": remover, ...SUITE });
    const out = path.join(dir, ".shardguard");
    const r = await runCli(["run", "--root", dir, "--out", out, "--jobs", "1", "t"]);
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain("running it again without them");
    // Every shard, the ones after the removal included, journaled events.
    const sizes = journalSizes(out);
    expect(sizes).toHaveLength(3);
    for (const size of sizes) expect(size).toBeGreaterThan(0);
  }, 30_000);
});
