/**
 * A whole public suite under `--files-per-shard auto` against plain `bun test` and `bun test --parallel=N`
 * (issue 22, item 3): wall time of alternating rounds (medians, ratio in this
 * job; a third series with `--timings` from one `--update-timings` run before
 * the rounds), the per-test statuses of the two compared, and the same suite with one
 * `while (true) {}` test file added, where every other file's tests must keep
 * the status they had.
 *
 *     bun bench/whole-suite.ts [--source GIT] [--commit SHA] [--dir DIR] [--sub PATH] [--rounds 3] [--jobs 2]
 *       [--timeout 30] [--keep]
 *
 * `--dir` takes a suite already set up; `--sub` runs in that folder of it (bknd's `app`).
 *
 * Set-up: clones GIT (default elysia's GitHub repository; any git URL or local
 * git directory) at SHA into a temp dir, leaving out blobs the source lacks
 * (a partial mirror), and installs its locked dependencies from the npm
 * registry with `bun install --frozen-lockfile --ignore-scripts`. The tests
 * then run offline. Linux; prints one line per round and a summary.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BUN, bunStatuses, CLI, differences, run, setUp, shardguardStatuses, type Statuses } from "./suite-helpers.ts";

const argv = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
};
const SOURCE = opt("--source", "https://github.com/elysiajs/elysia.git");
const COMMIT = opt("--commit", "8358ff9efbcedf9534995f5977f26b9ceab59329");
const ROUNDS = Number(opt("--rounds", "3"));
const JOBS = Number(opt("--jobs", "2"));
const TIMEOUT_S = Number(opt("--timeout", "30"));
const GIVEN = opt("--dir", "");
const SUB = opt("--sub", ".");
const KEEP = argv.includes("--keep") || GIVEN !== "";

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;

const top = GIVEN || setUp(SOURCE, COMMIT);
const dir = path.join(top, SUB);
const files = run(["git", "ls-files", "*.test.ts", "*.test.tsx", "*.spec.ts", "*.test.js"], dir)
  .out.trim()
  .split("\n")
  .filter(Boolean);
console.log(
  `suite: ${SOURCE} @ ${COMMIT.slice(0, 12)}, ${files.length} test files; Bun ${Bun.version}; jobs ${JOBS}; load ` +
    `${os.loadavg()[0]!.toFixed(1)}`,
);
try {
  const plain: number[] = [];
  const base: number[] = [];
  const sg: number[] = [];
  const timed: number[] = [];
  const cpu = { base: [] as number[], sg: [] as number[] };
  const timingsFile = path.join(dir, ".bench-timings.json");
  run(
    [
      BUN,
      CLI,
      "run",
      "--files-per-shard",
      "auto",
      "--jobs",
      String(JOBS),
      "--out",
      path.join(dir, ".bench-sg-warm"),
      "--update-timings",
      timingsFile,
    ],
    dir,
    false,
  );
  const recorded = Object.keys(
    (JSON.parse(readFileSync(timingsFile, "utf8")) as { files: Record<string, number> }).files,
  ).length;
  let baseStatuses: Statuses | null = null;
  let sgStatuses: Statuses | null = null;
  let timedStatuses: Statuses | null = null;
  const flaky = new Set<string>();
  for (let r = 0; r < ROUNDS; r++) {
    plain.push(run([BUN, "test"], dir, false).ms);
    const xml = path.join(dir, `.bench-base-${r}.xml`);
    const b = run([BUN, "test", `--parallel=${JOBS}`, "--reporter=junit", `--reporter-outfile=${xml}`], dir, false);
    const out = path.join(dir, `.bench-sg-${r}`);
    const s = run([BUN, CLI, "run", "--files-per-shard", "auto", "--jobs", String(JOBS), "--out", out], dir, false);
    const t = run(
      [
        BUN,
        CLI,
        "run",
        "--files-per-shard",
        "auto",
        "--jobs",
        String(JOBS),
        "--timings",
        timingsFile,
        "--out",
        `${out}-timed`,
      ],
      dir,
      false,
    );
    timed.push(t.ms);
    if (
      !existsSync(xml) ||
      !existsSync(path.join(out, "report.json")) ||
      !existsSync(path.join(`${out}-timed`, "report.json"))
    )
      throw new Error(`round ${r + 1}: a run wrote no report:\n${b.out.slice(-2000)}\n${s.out.slice(-2000)}`);
    const bs = bunStatuses(xml);
    const ss = shardguardStatuses(path.join(out, "report.json"));
    // A test whose status differs between two runs of the same tool is the suite's own flakiness, not a difference of
    // the tools.
    if (baseStatuses) for (const d of differences(baseStatuses, bs)) flaky.add(d.slice(0, d.lastIndexOf(": ")));
    if (sgStatuses) for (const d of differences(sgStatuses, ss)) flaky.add(d.slice(0, d.lastIndexOf(": ")));
    baseStatuses ??= bs;
    sgStatuses ??= ss;
    base.push(b.ms);
    sg.push(s.ms);
    cpu.base.push(b.cpuMs);
    cpu.sg.push(s.cpuMs);
    const ts = shardguardStatuses(path.join(`${out}-timed`, "report.json"));
    timedStatuses ??= ts;
    const diff = differences(bs, ss);
    console.log(
      `round ${r + 1}: plain ${(plain[r]! / 1000).toFixed(2)} s, bun test --parallel=${JOBS} ${(b.ms / 1000).toFixed(2)} s, shardguard auto ` +
        `${(s.ms / 1000).toFixed(2)} s (${(s.ms / b.ms).toFixed(2)}x), with --timings ` +
        `${(t.ms / 1000).toFixed(2)} s (${(t.ms / b.ms).toFixed(2)}x); ${bs.size} test names; ${diff.length} ` +
        `status difference(s)${diff.length ? `: ${diff.slice(0, 5).join("; ")}` : ""}; load ` +
        `${os.loadavg()[0]!.toFixed(1)}`,
    );
  }
  const stable = (k: string) => !flaky.has(k);
  const diffs = differences(baseStatuses!, sgStatuses!, stable);
  console.log(
    `median: plain bun test ${(median(plain) / 1000).toFixed(2)} s (shardguard auto ` +
      `${(median(sg) / median(plain)).toFixed(2)}x, with --timings ${(median(timed) / median(plain)).toFixed(2)}x)`,
  );
  console.log(
    `median: bun test --parallel=${JOBS} ${(median(base) / 1000).toFixed(2)} s, shardguard auto ` +
      `${(median(sg) / 1000).toFixed(2)} s: ${(median(sg) / median(base)).toFixed(2)}x (target <= 1.3x); ` +
      `with --timings (${recorded} files recorded) ${(median(timed) / 1000).toFixed(2)} s: ` +
      `${(median(timed) / median(base)).toFixed(2)}x; CPU ${(median(cpu.base) / 1000).toFixed(2)} s vs ` +
      `${(median(cpu.sg) / 1000).toFixed(2)} s (${(median(cpu.sg) / median(cpu.base)).toFixed(2)}x); wall ` +
      `range ` +
      `${Math.min(...sg.map((x, i) => x / base[i]!)).toFixed(2)}-` +
      `${Math.max(...sg.map((x, i) => x / base[i]!)).toFixed(2)}x`,
  );
  const timedDiffs = differences(baseStatuses!, timedStatuses!, stable);
  console.log(
    `statuses: ${diffs.length} difference(s) between the tools in round 1 (${timedDiffs.length} with --timings) ` +
      `outside ${flaky.size} test(s) that changed between rounds of one ` +
      `tool${[...diffs, ...timedDiffs].length ? `: ${[...diffs, ...timedDiffs].join("; ")}` : ""}`,
  );

  // One wedged file: its test is killed at the timeout, every other test keeps its status.
  const wedge = "test/zz-shardguard-wedge.test.ts";
  mkdirSync(path.join(dir, "test"), { recursive: true });
  writeFileSync(
    path.join(dir, wedge),
    'import { test } from "bun:test";\ntest("spins", () => {\n  while (true) {}\n});\n',
  );
  const out = path.join(dir, ".bench-sg-wedge");
  const w = run(
    [
      BUN,
      CLI,
      "run",
      "--files-per-shard",
      "auto",
      "--jobs",
      String(JOBS),
      "--timeout",
      String(TIMEOUT_S),
      "--grace",
      "1",
      "--out",
      out,
    ],
    dir,
    false,
  );
  const ws = shardguardStatuses(path.join(out, "report.json"));
  const others = differences(sgStatuses!, ws, (k) => !k.startsWith(`${wedge} >`) && stable(k));
  console.log(
    `wedge: ${(w.ms / 1000).toFixed(2)} s with --timeout ${TIMEOUT_S}; the spinning test: ` +
      `${(ws.get(`${wedge} > spins`) ?? ["absent"]).join(",")}; ${others.length} other test(s) changed ` +
      `status${others.length ? `: ${others.slice(0, 10).join("; ")}` : ""}`,
  );
} finally {
  if (KEEP) console.log(`kept ${dir}`);
  else rmSync(top, { recursive: true, force: true });
}
