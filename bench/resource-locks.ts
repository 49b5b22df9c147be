/**
 * What an exclusive file costs a run, measured against what the plan says.
 * A skewed suite (one long file, many short ones, one file made exclusive)
 * runs once with --update-timings to record every file's duration; then
 * `shardguard list --timings` prints the makespan the plan predicts with
 * and without `--exclusive`, and the suite runs with and without it. The
 * makespan of a run is its shards' span: the first spawn to the last
 * process group gone (report.json's startedAt and timeline.goneMs).
 *
 *     bun bench/resource-locks.ts [--jobs N] [--long-ms MS] [--short N] [--short-ms MS] [--exclusive-ms MS] [--keep]
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const argv = process.argv.slice(2);
const opt = (name: string, d: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : d);
const jobs = opt("--jobs", 2);
const longMs = opt("--long-ms", 4000);
const shortCount = opt("--short", 8);
const shortMs = opt("--short-ms", 1000);
const exclusiveMs = opt("--exclusive-ms", 1500);
const CLI = path.join(import.meta.dir, "..", "runner", "cli-entry.ts");

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-bench-locks-"));
mkdirSync(path.join(dir, "test"));
const write = (name: string, ms: number) =>
  writeFileSync(
    path.join(dir, "test", `${name}.test.ts`),
    `import { test } from "bun:test";\ntest(${JSON.stringify(name)}, async () => { await Bun.sleep(${ms}); });\n`,
  );
write("long", longMs);
for (let i = 0; i < shortCount; i++) write(`short-${i}`, shortMs);
write("regen", exclusiveMs);
const timings = path.join(dir, "timings.json");
const exclusive = ["--exclusive", "test/regen.test.ts"];

const cli = (args: string[]) => {
  const r = spawnSync(process.execPath, [CLI, ...args, "--root", dir, "--jobs", String(jobs)], {
    cwd: dir,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`shardguard ${args.join(" ")} exited ${r.status}: ${r.stdout}${r.stderr}`);
  return r.stdout;
};
/** The run's shard span, ms: first spawn to last process group gone. */
const span = () => {
  const report = JSON.parse(readFileSync(path.join(dir, ".shardguard", "report.json"), "utf8")) as {
    shards: { startedAt: string; timeline: { goneMs: number } }[];
  };
  const starts = report.shards.map((s) => Date.parse(s.startedAt));
  const ends = report.shards.map((s) => Date.parse(s.startedAt) + s.timeline.goneMs);
  return Math.max(...ends) - Math.min(...starts);
};

cli(["run", "--update-timings", timings]);
const listed = cli(["list", "--timings", timings, ...exclusive]);
const m = /planned makespan with \d+ jobs \(recorded durations\): ([\d.]+)s, ([\d.]+)s without/.exec(listed);
if (!m) throw new Error(`no planned makespan in:\n${listed}`);
const plannedWith = Number(m[1]) * 1000;
const plannedWithout = Number(m[2]) * 1000;
cli(["run", "--timings", timings]);
const without = span();
cli(["run", "--timings", timings, ...exclusive]);
const withExclusive = span();

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
console.log(
  `suite: 1 × ${longMs} ms, ${shortCount} × ${shortMs} ms, 1 × ${exclusiveMs} ms exclusive; --jobs ${jobs}; load ` +
    `${os.loadavg()[0]!.toFixed(2)}`,
);
console.log(
  `planned makespan: ${s(plannedWith)} with --exclusive, ${s(plannedWithout)} without: cost ` +
    `${s(plannedWith - plannedWithout)}`,
);
console.log(
  `measured span:    ${s(withExclusive)} with --exclusive, ${s(without)} without: cost ${s(withExclusive - without)}`,
);
console.log(
  `measured / planned: with ${(withExclusive / plannedWith).toFixed(3)}, without ` +
    `${(without / plannedWithout).toFixed(3)}`,
);
if (!argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${dir}`);
