#!/usr/bin/env bun
/**
 * Whole-process benchmark: what the run history (docs/history.md) adds to a run.
 *
 * Two suites, each run alternately with the history (the default SQLite file in OUT, growing round by round,
 * so the reads before a run see up to 20 earlier runs) and with `--no-history`, ROUNDS times each:
 *   files  FILES one-test files, `--jobs 2`
 *   p8     one file of 100,000 tests
 * Reports the median wall time of each way and their ratio. Target (issue 36): history ≤ 1.10 × --no-history.
 *
 * Usage: bun bench/history-append.ts [--files 200] [--tests 100000] [--rounds 5]
 * Exits 1 when a ratio is over the target, or a run exits other than 0.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { intArg } from "./suite-helpers.ts";

const arg = intArg;
const FILES = arg("files", 200);
const TESTS = arg("tests", 100_000);
const ROUNDS = arg("rounds", 5);
const TARGET = 1.1;
const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");

const base = mkdtempSync(path.join(os.tmpdir(), "sg-bench-history-"));

/** A suite directory of `files` (name → source). */
function suite(name: string, files: Record<string, string>): string {
  const dir = path.join(base, name);
  mkdirSync(dir);
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

const many: Record<string, string> = {};
for (let i = 0; i < FILES; i++)
  many[`f${String(i).padStart(4, "0")}.test.ts`] = `import { test } from "bun:test";\ntest("t${i}", () => {});\n`;
const p8 = {
  "p8.test.ts": `import { test } from "bun:test";\nfor (let i = 0; i < ${TESTS}; i++) test("t" + i, () => {});\n`,
};
const cases = [
  { name: `${FILES} one-test files, jobs 2`, dir: suite("files", many) },
  { name: `one file of ${TESTS} tests`, dir: suite("p8", p8) },
];

/** One `shardguard run` of `dir`; resolves with its wall time in ms. */
function timed(dir: string, extra: string[]): Promise<number> {
  const argv = [process.execPath, CLI, "run", "--root", dir, "--jobs", "2", "--timeout", "600", ...extra];
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: dir, stdio: "ignore", env: { ...process.env, NO_COLOR: "1" } });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.join(" ")} exited ${code}`)),
    );
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

let over = false;
try {
  for (const c of cases) {
    const on: number[] = [];
    const off: number[] = [];
    // Alternating, and which way goes first swaps each round, so drift in the machine's load hits both alike.
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ["on", "off"] : ["off", "on"];
      for (const way of order)
        if (way === "on") on.push(await timed(c.dir, []));
        else off.push(await timed(c.dir, ["--no-history"]));
    }
    if (!existsSync(path.join(c.dir, ".shardguard", "history.sqlite")))
      throw new Error(`${c.name}: no history written`);
    const ratio = median(on) / median(off);
    over ||= ratio > TARGET;
    console.log(
      `${c.name}: history ${(median(on) / 1000).toFixed(2)} s, --no-history ${(median(off) / 1000).toFixed(2)} s, ` +
        `${ratio.toFixed(3)}× (≤ ${TARGET}×: ${ratio <= TARGET ? "met" : "missed"}; medians of ${ROUNDS}, load ` +
        `${os.loadavg()[0]!.toFixed(1)})`,
    );
  }
} finally {
  rmSync(base, { recursive: true, force: true });
}
process.exit(over ? 1 : 0);
