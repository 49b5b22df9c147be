#!/usr/bin/env bun
/**
 * Whole-process benchmark: what the inspector event channel costs.
 *
 * Runs the same suite of small test files three ways, alternating, several
 * times each, and reports median wall time and ratios:
 *   plain   one `bun test FILE` process per file, N at a time (the baseline)
 *   off     `shardguard run --no-test-events --jobs N`
 *   events  `shardguard run --jobs N` (inspector channel on)
 * Target (docs/architecture.md, "The inspector event channel"): events ≤ 1.15 × plain.
 *
 * Usage: bun bench/events-overhead.ts [--files 100] [--jobs 2] [--rounds 5] [--test-ms 0]
 * --test-ms makes one test per file wait that long (a stand-in for real work:
 * with 0, each file is a ~6 ms process and fixed per-process costs dominate).
 * Exits 1 when the events/plain ratio is over the target.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { intArg } from "./suite-helpers.ts";

const arg = intArg;
const FILES = arg("files", 100);
const JOBS = arg("jobs", 2);
const ROUNDS = arg("rounds", 5);
const TEST_MS = process.argv.includes("--test-ms") ? Number(process.argv[process.argv.indexOf("--test-ms") + 1]) : 0;
if (!Number.isInteger(TEST_MS) || TEST_MS < 0) throw new Error("--test-ms needs a whole number of ms, 0 or more");
const TARGET = 1.15;
const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-bench-events-"));
mkdirSync(path.join(dir, "t"));
const files: string[] = [];
for (let i = 0; i < FILES; i++) {
  const file = path.join(dir, "t", `f${String(i).padStart(3, "0")}.test.ts`);
  // Three small tests per file, one of them async: a realistic "cheap" file.
  writeFileSync(
    file,
    `import { expect, test } from "bun:test";\n` +
      `test("adds ${i}", () => expect(${i} + 1).toBe(${i + 1}));\n` +
      `test("awaits ${i}", async () => { await Bun.sleep(${TEST_MS}); expect(true).toBe(true); });\n` +
      `test("strings ${i}", () => expect("x".repeat(3)).toBe("xxx"));\n`,
  );
  files.push(file);
}

/** Runs a command to completion; resolves with its wall time in ms. */
function timed(argv: string[], cwd: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, stdio: "ignore", env: { ...process.env, NO_COLOR: "1" } });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.join(" ")} exited ${code}`)),
    );
  });
}

/** The baseline: one plain `bun test FILE` per file, JOBS at a time, timed as one whole. */
async function plain(): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < files.length) await timed([process.execPath, "test", files[next++]!], dir);
  };
  await Promise.all(Array.from({ length: JOBS }, worker));
  return performance.now() - t0;
}

const runs: Record<"plain" | "off" | "events", () => Promise<number>> = {
  plain,
  off: () => timed([process.execPath, CLI, "run", "--root", dir, "--jobs", String(JOBS), "--no-test-events", "t"], dir),
  events: () => timed([process.execPath, CLI, "run", "--root", dir, "--jobs", String(JOBS), "t"], dir),
};
const samples: Record<string, number[]> = { plain: [], off: [], events: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(runs)) samples[name]!.push(await run());
  process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
}
rmSync(dir, { recursive: true, force: true });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const med = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])) as Record<string, number>;
const ratio = (a: string) => med[a]! / med.plain!;
console.log(`files ${FILES}, jobs ${JOBS}, rounds ${ROUNDS}, test-ms ${TEST_MS}, bun ${Bun.version}`);
for (const name of ["plain", "off", "events"]) {
  console.log(
    `${name.padEnd(7)} median ${(med[name]! / 1000).toFixed(2)} s  (×${ratio(name).toFixed(3)} of plain)  samples ` +
      `${samples[name]!.map((x) => (x / 1000).toFixed(2)).join(" ")}`,
  );
}
const verdict = ratio("events") <= TARGET;
console.log(`events/plain ${ratio("events").toFixed(3)}: ${verdict ? "within" : "OVER"} the ${TARGET} target`);
process.exitCode = verdict ? 0 : 1;
