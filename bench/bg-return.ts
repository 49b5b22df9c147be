/**
 * How long `shardguard bg --local` holds the terminal: the wall time of the
 * whole `bg` process (Bun start-up, planning, the log header, starting the
 * detached worker), median of N runs, against a baseline of the same CLI
 * doing nothing (`shardguard --version`) in the same invocation. Each bg run
 * starts a real run of a test that sleeps; the bench checks that the run is
 * still going when bg has returned, then waits for every log's EXIT line.
 *
 *     bun bench/bg-return.ts [--runs N] [--limit-ms MS] [--keep]
 *
 * Exit 1 when the bg median reaches --limit-ms (default 1000) or a run did
 * not end with EXIT=0.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const argv = process.argv.slice(2);
const opt = (name: string, d: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : d);
const runs = opt("--runs", 7);
const limitMs = opt("--limit-ms", 1000);
const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-bench-bg-"));
writeFileSync(
  path.join(dir, "sleep.test.ts"),
  `import { test } from "bun:test";\ntest("sleeps", async () => { await Bun.sleep(3000); });\n`,
);

const time = (args: string[]) => {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, encoding: "utf8" });
  return { ms: performance.now() - t0, out: r.stdout, code: r.status };
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const base: number[] = [];
const bg: number[] = [];
const logs: string[] = [];
let stillRunning = 0;
for (let i = 0; i < runs; i++) {
  base.push(time(["--version"]).ms);
  const r = time(["bg", "--local", "--lock", `bench-bg-${process.pid}-${i}`]);
  bg.push(r.ms);
  const log = /log (\/\S+\.log)/.exec(r.out)?.[1];
  if (r.code !== 0 || !log) throw new Error(`bg failed: ${r.out}`);
  logs.push(log);
  if (!readFileSync(log, "utf8").includes("### shardguard EXIT=")) stillRunning++;
}
const deadline = Date.now() + 60_000;
while (Date.now() < deadline && logs.some((l) => !readFileSync(l, "utf8").includes("### shardguard EXIT=")))
  await Bun.sleep(200);
const passed = logs.filter((l) => readFileSync(l, "utf8").trimEnd().endsWith("### shardguard EXIT=0 ###")).length;

const b = median(base);
const m = median(bg);
console.log(
  `runs ${runs}: --version median ${b.toFixed(0)} ms; bg --local median ${m.toFixed(0)} ms ` +
    `(x${(m / b).toFixed(2)}), max ${Math.max(...bg).toFixed(0)} ms`,
);
console.log(`still running when bg returned: ${stillRunning}/${runs}; ended EXIT=0: ${passed}/${runs}`);
if (!argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${dir}`);
process.exitCode = m < limitMs && passed === runs && stillRunning === runs ? 0 : 1;
