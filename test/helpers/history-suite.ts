/**
 * The history's done-when suite: a test that fails every other run (a counter file), one that always fails and
 * passing ones, in a git repository (one commit), run by the real CLI; shared by the SQLite and PostgreSQL tests.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, runCli, type CliRun } from "./cli.ts";

const FLAKY_TEST = `
  test("flaky", () => {
    const f = import.meta.dir + "/count.txt";
    const n = existsSync(f) ? Number(readFileSync(f, "utf8")) : 0;
    writeFileSync(f, String(n + 1));
    if (n % 2 === 1) throw new Error("fails every other run");
  });`;

/** A suite with a flaky test (passes on runs 1, 3, …), optionally a stable failure, and three passing tests. */
export function flakySuite(withStableFailure: boolean, bunfig = ""): string {
  const dir = makeSuite({
    "a.test.ts":
      `import { expect, test } from "bun:test";\nimport { existsSync, readFileSync, writeFileSync } from "node:fs";\n` +
      `test("one", () => {});\ntest("two", () => {});\ntest("three", () => {});\n${FLAKY_TEST}\n` +
      (withStableFailure ? `test("stable failure", () => { expect(1).toBe(2); });\n` : ""),
    "b.test.ts": `import { test } from "bun:test";\ntest("four", () => {});\ntest("five", () => {});\n`,
    ".gitignore": "count.txt\n.shardguard/\n",
    ...(bunfig ? { "bunfig.toml": bunfig } : {}),
  });
  const git = (...args: string[]) => spawnSync("git", args, { cwd: dir, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "suite");
  return dir;
}

/** One `shardguard run` of the suite; `args` after the defaults. */
export function runSuite(dir: string, args: string[] = []): Promise<CliRun> {
  return runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "60", ...args], { limitMs: 90_000 });
}

/** `shardguard history ...` of the suite, its JSON parsed. */
export async function historyJson(dir: string, args: string[]): Promise<Record<string, unknown>> {
  const r = await runCli(["history", "--root", dir, "--json", ...args], { limitMs: 60_000 });
  if (r.code !== 0) throw new Error(`history ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** The report.html's test rows (its embedded data). */
export function htmlRows(dir: string): unknown[][] {
  const html = readFileSync(path.join(dir, ".shardguard", "report.html"), "utf8");
  const m = /<script type="application\/json" id="sg-data">([\s\S]*?)<\/script>/.exec(html);
  return (JSON.parse(m![1]!) as { tests: unknown[][] }).tests;
}

/** Three runs of the done-when suite; returns the run ids, oldest first. */
export async function threeRuns(dir: string, args: string[] = []): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await runSuite(dir, args);
    if (r.code !== 1) throw new Error(`run ${i + 1} exited ${r.code}: ${r.stdout}\n${r.stderr}`);
    if (/note: run history/.test(r.stdout)) throw new Error(`run ${i + 1} could not use the history: ${r.stdout}`);
    ids.push(readReport(dir).runId);
  }
  return ids;
}
