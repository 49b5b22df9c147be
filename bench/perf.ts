#!/usr/bin/env bun
/**
 * Whole-process benchmark of the performance targets in bench/README.md. Each case runs
 * shardguard and its baseline side by side in the same job, alternating,
 * several rounds, and compares medians of wall time (and, for p8, the
 * runner's peak RSS):
 *
 *   p1  200 one-test files, jobs 2, events on (≤ 2.5×) and off (≤ 1.5×)
 *       baseline: one plain `bun test FILE` process per file, 2 at a time
 *   p3  300 files × 10 short tests, --files-per-shard 50, jobs 2
 *       baseline: `bun test --parallel=2` on the same files                 target ≤ 1.3×
 *   p8  one file of 100,000 tests, events on, in five shapes (P8_SHAPES):
 *       p8 flat, p8-describe, p8-nested, p8-each, p8-long
 *       baseline: `bun test --reporter=junit` of that file                  target ≤ 4×, runner peak ≤ 300 MiB
 *   p5  one 3 s file and six 0.5 s files, jobs 2: a run with --update-timings,
 *       then one with --timings; its makespan against
 *       max(longest, total/jobs) + start-up (a shardguard run of one empty test)   target ≤ 1.05×
 *
 * p1 and p8 also measure, for context: the shard child alone (the runner's
 * command line, environment and event channel, events parsed and
 * discarded, no supervision: the design's floor, which receives every
 * event), a bare `bun --inspect-wait=unix:` child dialing the same channel
 * (cheaper, but it exits before Bun has sent most events of a large file:
 * each floor row counts the test ends that arrived) and shardguard
 * `--no-test-events`. bench/inspector-floor.ts compares the channel with
 * the WebSocket client it replaced.
 *
 * Usage: bun bench/perf.ts [--cases p1,p3,p8,p5,p8-describe,p8-nested,p8-each,p8-long] [--rounds 3] [--p8-tests 100000]
 *                          [--compare-cli OTHER/runner/cli-entry.ts]
 * The default cases are p1, p3, p8 and p5; the other P8 shapes run when named.
 * `--compare-cli` adds, for p1, p3 and the p8 shapes, runs of another checkout's CLI
 * (e.g. main's) to the same alternating rounds, so before and after are
 * compared in one job. For p1, p3 and p8 the CPU time of each shardguard run is
 * printed too (the whole run, and the runner alone): on a shared 2-core
 * machine wall ratios move by 2x between runs, CPU time much less.
 * Exits 1 when a measured case misses its target. Linux only (reads /proc for RSS).
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { listenForTestEvents } from "../runner/events/inspector.ts";
import { buildCompiledCli, freshCompiledCli } from "../runner/cli/compiled.ts";
import { inspectorEnv, SHARD_ENV, shardArgv } from "../runner/exec/bun-command.ts";
import { acknowledgeEndOfRun, prepareStartCount } from "../runner/exec/marks.ts";

const opt = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const CASES = (opt("cases") ?? "p1,p3,p8,p5").split(",");
const ROUNDS = Number(opt("rounds") ?? 3);
const P8_TESTS = Number(opt("p8-tests") ?? 100_000);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("--rounds needs a positive integer");
if (!Number.isInteger(P8_TESTS) || P8_TESTS < 1) throw new Error("--p8-tests needs a positive integer");
const ROOT = path.join(import.meta.dir, "..");
/**
 * The `shardguard` command as a user runs it (package.json `bin`): the
 * compiled CLI, built first when the sources changed since the last build
 * (runner/cli/compiled.ts). `--compare-cli runner/cli-entry.ts` runs the
 * sources beside it.
 */
const CLI = path.join(ROOT, "runner", "cli-bin.ts");
if (freshCompiledCli(ROOT) === null) process.stderr.write(`perf: built ${await buildCompiledCli(ROOT)}\n`);
const COMPARE_CLI = opt("compare-cli");
const BUN = process.execPath;

interface Sample {
  ms: number;
  /** Peak RSS of the spawned process, MiB (VmHWM sampled every 20 ms). */
  peakMiB: number;
  /** CPU time (user + system) of the process and every descendant it waited for, ms; 0 when not measured. */
  cpuMs?: number;
  /** CPU time of the shardguard runner process alone, ms; 0 when not measured. */
  runnerCpuMs?: number;
  /**
   * For a floor: test ends its event channel received, over all its children (a child that exits first loses the
   * rest).
   */
  ends?: number;
}

/** A discarding sink for a floor's channel that counts the test ends it was given. */
function countingSink(): { sink: { found(): void; start(): void; end(): void }; ends: () => number } {
  let ends = 0;
  return {
    sink: {
      found() {},
      start() {},
      end() {
        ends += 1;
      },
    },
    ends: () => ends,
  };
}

/**
 * A preload that writes the runner's own CPU time (process.cpuUsage: this
 * process only, not its children) to the file named by SG_BENCH_CPU_OUT at
 * exit. Written into a temp dir by {@link timedCpu}; bench only.
 */
const CPU_SHIM =
  'process.on("exit", () => { const u = process.cpuUsage(); ' +
  'require("fs").writeFileSync(process.env.SG_BENCH_CPU_OUT, String((u.user + u.system) / 1000)); });\n';

/**
 * Runs a shardguard command line (`[BUN, CLI, ...args]`) to completion with
 * the CPU shim preloaded: wall time, the CPU time of the whole run (runner,
 * shard children, guardian: Bun's resourceUsage of the waited process), of
 * the runner alone, and the runner's peak RSS (VmHWM every 20 ms). Exit code
 * 0 or 1 (a shard that fails is no bench error).
 */
async function timedCpu(argv: string[], cwd: string): Promise<Sample> {
  const shimDir = mkdtempSync(path.join(os.tmpdir(), "sg-cpu-"));
  const shim = path.join(shimDir, "cpu-shim.js");
  const out = path.join(shimDir, "cpu.txt");
  writeFileSync(shim, CPU_SHIM);
  const t0 = performance.now();
  const child = Bun.spawn([argv[0]!, "--preload", shim, ...argv.slice(1)], {
    cwd,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NO_COLOR: "1", SG_BENCH_CPU_OUT: out },
  });
  const stderr = new Response(child.stderr).text();
  let peak = 0;
  const poll = setInterval(() => {
    try {
      const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0);
      if (kb > peak) peak = kb;
    } catch {}
  }, 20);
  const code = await child.exited;
  clearInterval(poll);
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${(await stderr).slice(-2000)}`);
  const cpuMs = Number(child.resourceUsage()?.cpuTime.total ?? 0) / 1000;
  const runnerCpuMs = Number(readFileSync(out, "utf8"));
  rmSync(shimDir, { recursive: true, force: true });
  return { ms, peakMiB: peak / 1024, cpuMs, runnerCpuMs };
}

/**
 * Runs a command to completion (exit 0): wall time and the CPU time (user +
 * system, ms) of the process and the children it waited for, from Bun's
 * resourceUsage. For a baseline whose CPU time is compared with a
 * shardguard run's (on a loaded machine CPU ratios move less than wall ones).
 */
async function timedRusage(argv: string[], cwd: string): Promise<Sample> {
  const t0 = performance.now();
  const child = Bun.spawn(argv, { cwd, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
  const stderr = new Response(child.stderr).text();
  const code = await child.exited;
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${(await stderr).slice(-2000)}`);
  return { ms, peakMiB: 0, cpuMs: Number(child.resourceUsage()?.cpuTime.total ?? 0) / 1000 };
}

/** Runs a command to completion (exit code in `ok`, or any code when `anyCode`); wall time and peak RSS. */
function timed(
  argv: string[],
  cwd: string,
  okCodes: number[] = [0],
  extraEnv: Record<string, string> = {},
): Promise<Sample> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, NO_COLOR: "1", ...extraEnv },
    });
    let peak = 0;
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr = (stderr + d).slice(-2000)));
    const poll = setInterval(() => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
        const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
        if (kb > peak) peak = kb;
      } catch {}
    }, 20);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearInterval(poll);
      const ms = performance.now() - t0;
      if (okCodes.includes(code ?? -1)) resolve({ ms, peakMiB: peak / 1024 });
      else reject(new Error(`${argv.join(" ")} exited ${code}: ${stderr}`));
    });
  });
}

/** One `bun test FILE` per file, `jobs` at a time, timed as one whole. */
async function perFile(files: string[], jobs: number, cwd: string): Promise<Sample> {
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < files.length) await timed([BUN, "test", files[next++]!], cwd);
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  return { ms: performance.now() - t0, peakMiB: 0 };
}

/**
 * The floor of the runner's inspector channel: per file, the runner's own
 * listener (`listenForTestEvents`, the socket made before the spawn), a
 * bare `bun --inspect-wait=unix:… test FILE` child that dials it, and the
 * handshake (TestReporter/LifecycleReporter enable, Inspector.initialized,
 * and the end-of-run barrier's first request), events parsed and
 * discarded, `jobs` at a time. No preload (so the barrier never completes),
 * no JUnit, no supervision.
 */
async function inspectorFloor(files: string[], jobs: number, cwd: string): Promise<Sample> {
  const t0 = performance.now();
  let next = 0;
  let n = 0;
  const sockDir = mkdtempSync(path.join(os.tmpdir(), "sg-floor-"));
  const counted = countingSink();
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++]!;
      const socketPath = path.join(sockDir, `${n++}.sock`);
      const channel = listenForTestEvents({
        socketPath,
        connectTimeoutMs: 10_000,
        onEvent: () => {},
        sink: counted.sink,
      });
      const child = spawn(BUN, [`--inspect-wait=unix:${socketPath}`, "test", file], { cwd, stdio: "ignore" });
      const exited = new Promise((r) => child.once("exit", r));
      await channel.ready;
      await exited;
      await channel.closed;
      channel.close();
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  rmSync(sockDir, { recursive: true, force: true });
  return { ms: performance.now() - t0, peakMiB: 0, ends: counted.ends() };
}

/**
 * The floor of the shard child itself: per file, the command line and
 * environment the runner gives a shard (exec/bun-command.ts `shardArgv`:
 * `--no-orphans`, the shard preload with its marks and start count, Bun's
 * JUnit), spawned `jobs` at a time by this loop with no runner around it:
 * no log, no timeout, no sweep, no cgroup, no verdict, no report. With
 * `events`, also the runner's event channel (`listenForTestEvents`: the
 * handshake, the release of the preload's hold, the end-of-run barrier),
 * events parsed and discarded. What a design that keeps the preload's
 * evidence, Bun's JUnit and (with `events`) the inspector costs before any
 * supervision.
 */
async function childFloor(files: string[], jobs: number, cwd: string, events: boolean): Promise<Sample> {
  const out = mkdtempSync(path.join(os.tmpdir(), "sg-child-floor-"));
  const t0 = performance.now();
  const counted = countingSink();
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const n = next++;
      const marks = path.join(out, `${n}.marks`);
      writeFileSync(marks, "");
      prepareStartCount(marks);
      const argv = shardArgv({
        bun: BUN,
        root: cwd,
        files: [files[n]!],
        junitPath: path.join(out, `${n}.xml`),
        bunArgs: [],
      });
      const env: Record<string, string> = { [SHARD_ENV.marks]: marks, [SHARD_ENV.inShard]: "1" };
      if (!events) {
        await timed(argv, cwd, [0], env);
        continue;
      }
      const socketPath = path.join(out, `${n}.sock`);
      const channel = listenForTestEvents({
        socketPath,
        connectTimeoutMs: 10_000,
        onEvent: () => {},
        sink: counted.sink,
        // As the runner does: the preload waits for this acknowledgement at the end of the run.
        onEndOfRun: () => acknowledgeEndOfRun(marks),
      });
      const exited = timed(argv, cwd, [0], {
        ...env,
        ...(inspectorEnv(socketPath) as Record<string, string>),
        [SHARD_ENV.yieldEvents]: "1",
      });
      await channel.ready;
      await exited;
      await channel.closed;
      channel.close();
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  const ms = performance.now() - t0;
  rmSync(out, { recursive: true, force: true });
  return { ms, peakMiB: 0, ends: counted.ends() };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Runs each variant ROUNDS times, alternating; returns medians. */
async function compare(
  label: string,
  variants: Record<string, () => Promise<Sample>>,
): Promise<
  Record<string, { ms: number; peakMiB: number; cpuMs: number; runnerCpuMs: number; ends: number; all: number[] }>
> {
  const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(variants)) samples[name]!.push(await run());
    process.stderr.write(`${label}: round ${round + 1}/${ROUNDS} done\n`);
  }
  return Object.fromEntries(
    Object.entries(samples).map(([k, v]) => [
      k,
      {
        ms: median(v.map((s) => s.ms)),
        peakMiB: median(v.map((s) => s.peakMiB)),
        cpuMs: median(v.map((s) => s.cpuMs ?? 0)),
        runnerCpuMs: median(v.map((s) => s.runnerCpuMs ?? 0)),
        ends: Math.min(...v.map((s) => s.ends ?? 0)),
        all: v.map((s) => s.ms),
      },
    ]),
  );
}

const suiteDir = (name: string) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), `sg-bench-${name}-`));
  mkdirSync(path.join(dir, "t"));
  return dir;
};
const sg = (dir: string, ...args: string[]) => [
  BUN,
  CLI,
  "run",
  "--root",
  dir,
  "--out",
  path.join(dir, ".sg"),
  ...args,
];
/** The same command line run by the --compare-cli checkout. */
const other = (argv: string[]) => [BUN, COMPARE_CLI!, ...argv.slice(2)];
/** Wall and CPU figures of a timedCpu variant, for the per-case CPU lines. */
const cpuLine = (name: string, m: { ms: number; cpuMs: number; runnerCpuMs: number; all: number[] }) =>
  `${name}: wall ${m.all.map((ms) => s(ms)).join(", ")}; median CPU ${s(m.cpuMs)} in all (runner ` +
  `${s(m.runnerCpuMs)}, shard children and guardian ${s(m.cpuMs - m.runnerCpuMs)})\n`;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const rows: string[] = [];
let failed = false;
const verdict = (ok: boolean) => {
  if (!ok) failed = true;
  return ok ? "met" : "MISSED";
};

/**
 * The shardguard variants of p1 and p8: `run --jobs JOBS t` with events on
 * (`shardguard`) and `--no-test-events` (`noEvents`), and with
 * `--compare-cli` the same two through the other checkout's CLI.
 */
const withAndWithoutEvents = (dir: string, jobs: string): Record<string, () => Promise<Sample>> => {
  const args = (...extra: string[]) => sg(dir, "--jobs", jobs, ...extra, "t");
  return {
    shardguard: () => timedCpu(args(), dir),
    noEvents: () => timedCpu(args("--no-test-events"), dir),
    ...(COMPARE_CLI
      ? {
          other: () => timedCpu(other(args()), dir),
          otherNoEvents: () => timedCpu(other(args("--no-test-events")), dir),
        }
      : {}),
  };
};

if (CASES.includes("p1")) {
  const dir = suiteDir("p1");
  const files = Array.from({ length: 200 }, (_, i) => {
    const f = path.join(dir, "t", `f${String(i).padStart(3, "0")}.test.ts`);
    writeFileSync(f, `import { expect, test } from "bun:test";\ntest("one ${i}", () => expect(${i}).toBe(${i}));\n`);
    return f;
  });
  const m = await compare("p1", {
    raw: () => perFile(files, 2, dir),
    floor: () => inspectorFloor(files, 2, dir),
    childFloor: () => childFloor(files, 2, dir, false),
    childFloorEvents: () => childFloor(files, 2, dir, true),
    ...withAndWithoutEvents(dir, "2"),
  });
  for (const name of ["shardguard", "noEvents", "other", "otherNoEvents"])
    if (m[name]) process.stderr.write(cpuLine(`p1 ${name}`, m[name]));
  const r = m.shardguard!.ms / m.raw!.ms;
  rows.push(
    `| P1 200 one-test files, jobs 2, events on | raw \`bun test FILE\` ×200, 2 at a time: ${s(m.raw!.ms)} | ` +
      `${s(m.shardguard!.ms)} (${r.toFixed(2)}×) | ≤ 2.5× ${verdict(r <= 2.5)} |`,
  );
  const ends = (n: number) => `${n} of 200 test ends arrived (fewest in a round)`;
  rows.push(
    `| P1 bare \`bun --inspect-wait=unix:\` child dialing the runner's channel + handshake per file, jobs 2 | ` +
      `same raw baseline | ${s(m.floor!.ms)} ` +
      `(${(m.floor!.ms / m.raw!.ms).toFixed(2)}×), ${ends(m.floor!.ends)} | (context) |`,
  );
  rows.push(
    `| P1 floor: the shard child alone, events on (the runner's command line and environment: preload, marks, ` +
      `JUnit; the runner's event channel: handshake, release, end-of-run barrier), no supervision, jobs 2 | ` +
      `same raw baseline | ${s(m.childFloorEvents!.ms)} ` +
      `(${(m.childFloorEvents!.ms / m.raw!.ms).toFixed(2)}×), ${ends(m.childFloorEvents!.ends)} | (context) |`,
  );
  rows.push(
    `| P1 floor: the shard child alone, events off, no supervision, jobs 2 | same raw baseline | ` +
      `${s(m.childFloor!.ms)} (${(m.childFloor!.ms / m.raw!.ms).toFixed(2)}×) | (context) |`,
  );
  rows.push(
    `| P1 same, --no-test-events | same raw baseline | ${s(m.noEvents!.ms)} ` +
      `(${(m.noEvents!.ms / m.raw!.ms).toFixed(2)}×) | ≤ 1.5× ${verdict(m.noEvents!.ms / m.raw!.ms <= 1.5)} |`,
  );
  if (m.other)
    rows.push(
      `| P1 events on, --compare-cli ${COMPARE_CLI} | same raw baseline | ${s(m.other.ms)} ` +
        `(${(m.other.ms / m.raw!.ms).toFixed(2)}×) | (context) |`,
    );
  if (m.otherNoEvents)
    rows.push(
      `| P1 --no-test-events, --compare-cli | same raw baseline | ${s(m.otherNoEvents.ms)} ` +
        `(${(m.otherNoEvents.ms / m.raw!.ms).toFixed(2)}×) | (context) |`,
    );
  rmSync(dir, { recursive: true, force: true });
}

if (CASES.includes("p3")) {
  const dir = suiteDir("p3");
  for (let i = 0; i < 300; i++) {
    const tests = Array.from({ length: 10 }, (_, j) => `test("t${j}", () => expect(${i} + ${j}).toBe(${i + j}));`).join(
      "\n",
    );
    writeFileSync(
      path.join(dir, "t", `f${String(i).padStart(3, "0")}.test.ts`),
      `import { expect, test } from "bun:test";\n${tests}\n`,
    );
  }
  const m = await compare("p3", {
    parallel: () => timed([BUN, "test", "--parallel=2", "./t"], dir),
    shardguard: () => timedCpu(sg(dir, "--jobs", "2", "--files-per-shard", "50", "t"), dir),
    ...(COMPARE_CLI
      ? { other: () => timedCpu(other(sg(dir, "--jobs", "2", "--files-per-shard", "50", "t")), dir) }
      : {}),
  });
  for (const name of ["shardguard", "other"]) if (m[name]) process.stderr.write(cpuLine(`p3 ${name}`, m[name]));
  const r = m.shardguard!.ms / m.parallel!.ms;
  rows.push(
    `| P3 300 files × 10 tests, --files-per-shard 50, jobs 2 | \`bun test --parallel=2\`: ${s(m.parallel!.ms)} | ` +
      `${s(m.shardguard!.ms)} (${r.toFixed(2)}×) | ≤ 1.3× ${verdict(r <= 1.3)} |`,
  );
  if (m.other)
    rows.push(
      `| P3 --compare-cli ${COMPARE_CLI} | same | ${s(m.other.ms)} ` +
        `(${(m.other.ms / m.parallel!.ms).toFixed(2)}×) | (context) |`,
    );
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The P8 shapes: one file of P8_TESTS tests each, as suites are written.
 * `p8` flat `test("t"+i)`; `p8-describe` 1,000 describes × 100 tests;
 * `p8-nested` a chain of ten describes with 10 tests at each level, the
 * chain repeated to P8_TESTS; `p8-each` `describe.each` of 100 rows over a
 * `test.each` table (names formatted by Bun); `p8-long` names of 200
 * characters (describes and tests). Tests per describe scale with P8_TESTS.
 */
const P8_SHAPES: Record<string, { label: string; body: () => string; tests: () => number }> = {
  p8: {
    label: "flat",
    body: () => `for (let i = 0; i < ${P8_TESTS}; i++) test("t" + i, () => { expect(i).toBe(i); });\n`,
    tests: () => P8_TESTS,
  },
  "p8-describe": {
    label: "1,000 describes × tests",
    body: () => {
      const per = Math.max(1, Math.ceil(P8_TESTS / 1000));
      return (
        `for (let d = 0; d < 1000; d++) describe("suite " + d, () => {\n  for (let i = 0; i < ${per}; i++) { ` +
        `const n = d * ${per} + i; if (n < ${P8_TESTS}) test("t" + i, () => { expect(n).toBe(n); }); }\n});\n`
      );
    },
    tests: () => P8_TESTS,
  },
  "p8-nested": {
    label: "ten levels of describes, 10 tests per level, repeated",
    body: () => {
      const chains = Math.max(1, Math.ceil(P8_TESTS / 100));
      return [
        `function level(chain: number, depth: number) {`,
        `  describe(depth === 0 ? "chain " + chain : "level " + depth, () => {`,
        `    for (let i = 0; i < 10; i++) test("t" + i, () => { expect(chain * 100 + depth * 10 + ` +
          `i).toBeGreaterThanOrEqual(0); });`,
        `    if (depth < 9) level(chain, depth + 1);`,
        `  });`,
        `}`,
        `for (let c = 0; c < ${chains}; c++) level(c, 0);`,
        ``,
      ].join("\n");
    },
    tests: () => Math.max(1, Math.ceil(P8_TESTS / 100)) * 100,
  },
  "p8-each": {
    label: "`describe.each` × `test.each` tables",
    body: () => {
      const rows = Math.max(1, Math.ceil(P8_TESTS / 100));
      return [
        `const rows = Array.from({ length: ${rows} }, (_, i) => [i, i * 2, i * 3]);`,
        `describe.each(Array.from({ length: 100 }, (_, t) => [t]))("table %i", (t) => {`,
        `  test.each(rows)("row %# %i + %i = %i", (a, b, c) => { expect(a + b).toBe(c); });`,
        `});`,
        ``,
      ].join("\n");
    },
    tests: () => Math.max(1, Math.ceil(P8_TESTS / 100)) * 100,
  },
  "p8-long": {
    label: "names of 200 characters, 100 describes",
    body: () => {
      const per = Math.max(1, Math.ceil(P8_TESTS / 100));
      return [
        `const long = (head: string) => (head + " ").padEnd(200, "abcdefghij ");`,
        `for (let d = 0; d < 100; d++) describe(long("suite " + d), () => {`,
        `  for (let i = 0; i < ${per}; i++) test(long("test " + d + "." + i), () => { expect(i).toBe(i); });`,
        `});`,
        ``,
      ].join("\n");
    },
    tests: () => Math.max(1, Math.ceil(P8_TESTS / 100)) * 100,
  },
};

for (const [key, shape] of Object.entries(P8_SHAPES)) {
  if (!CASES.includes(key)) continue;
  const dir = suiteDir(key);
  const file = path.join(dir, "t", "many.test.ts");
  writeFileSync(file, `import { describe, expect, test } from "bun:test";\n${shape.body()}`);
  const m = await compare(key, {
    junit: () =>
      timedRusage(
        [BUN, "test", "--reporter=junit", `--reporter-outfile=${path.join(dir, "bun-junit.xml")}`, file],
        dir,
      ),
    floor: () => inspectorFloor([file], 1, dir),
    childFloorEvents: () => childFloor([file], 1, dir, true),
    ...withAndWithoutEvents(dir, "1"),
  });
  const junit = readFileSync(path.join(dir, "bun-junit.xml"), "utf8");
  const tests = (junit.match(/<testcase /g) ?? []).length;
  if (tests !== shape.tests())
    throw new Error(`${key}: Bun's JUnit has ${tests} test cases, expected ${shape.tests()}`);
  for (const name of ["shardguard", "noEvents", "other", "otherNoEvents"])
    if (m[name]) process.stderr.write(cpuLine(`${key} ${name}`, m[name]));
  // Every sample, for a shared machine where one slow round moves a median.
  for (const [name, v] of Object.entries(m))
    process.stderr.write(`${key} ${name}: ${v.all.map((ms) => s(ms)).join(", ")}\n`);
  const base = m.junit!.ms;
  const ratio = (ms: number) => `${s(ms)} (${(ms / base).toFixed(2)}×)`;
  // CPU of the whole run (runner, child, guardian) against the baseline's, and the runner's own.
  const cpu = (v: { cpuMs: number; runnerCpuMs: number }) =>
    `CPU ${(v.cpuMs / m.junit!.cpuMs).toFixed(2)}× the baseline's, runner CPU ${s(v.runnerCpuMs)}`;
  const r = m.shardguard!.ms / base;
  const rss = m.shardguard!.peakMiB;
  const P = key.toUpperCase();
  rows.push(
    `| ${P} one file, ${tests.toLocaleString("en")} tests, ${shape.label}, events on | \`bun test ` +
      `--reporter=junit\`: ${s(base)}, CPU ${s(m.junit!.cpuMs)} | ${ratio(m.shardguard!.ms)}, runner peak ` +
      `${rss.toFixed(0)} MiB, ` +
      `${cpu(m.shardguard!)} | ≤ 4× ${verdict(r <= 4)}, ≤ 300 MiB ${verdict(rss <= 300)} |`,
  );
  // The shard child's own floor must have every event, or it is no floor (the bare child's is not).
  if (m.childFloorEvents!.ends !== tests)
    throw new Error(`${key}: the shard child alone delivered ${m.childFloorEvents!.ends} of ${tests} test ends`);
  const ends = (n: number) =>
    `${n.toLocaleString("en")} of ${tests.toLocaleString("en")} test ends arrived (fewest in a round)`;
  rows.push(
    `| ${P} floor: the shard child alone, events on (the runner's command line, environment and event channel: ` +
      `preload hold, handshake, release, end-of-run barrier; JUnit), events parsed and discarded, no ` +
      `supervision | same | ${ratio(m.childFloorEvents!.ms)}, ${ends(m.childFloorEvents!.ends)} | (context) |`,
  );
  rows.push(
    `| ${P} bare \`bun --inspect-wait=unix:\` child + handshake, events parsed and discarded: no floor, the child ` +
      `exits before Bun has sent most events | same | ${ratio(m.floor!.ms)}, ${ends(m.floor!.ends)} | ` +
      `(context) |`,
  );
  rows.push(
    `| ${P} same, --no-test-events | same | ${ratio(m.noEvents!.ms)}, runner peak ` +
      `${m.noEvents!.peakMiB.toFixed(0)} MiB, ${cpu(m.noEvents!)} | (context) |`,
  );
  if (m.other)
    rows.push(
      `| ${P} events on, --compare-cli ${COMPARE_CLI} | same | ${ratio(m.other.ms)}, runner peak ` +
        `${m.other.peakMiB.toFixed(0)} MiB, ${cpu(m.other)} | (context) |`,
    );
  if (m.otherNoEvents)
    rows.push(
      `| ${P} --no-test-events, --compare-cli | same | ${ratio(m.otherNoEvents.ms)}, runner peak ` +
        `${m.otherNoEvents.peakMiB.toFixed(0)} MiB, ${cpu(m.otherNoEvents)} | (context) |`,
    );
  rmSync(dir, { recursive: true, force: true });
}

if (CASES.includes("p5")) {
  const dir = suiteDir("p5");
  // The long file sorts last, so plan order would start it last.
  writeFileSync(
    path.join(dir, "t", "z-long.test.ts"),
    `import { test } from "bun:test";\ntest("long", async () => { await Bun.sleep(3000); });\n`,
  );
  for (let i = 0; i < 6; i++)
    writeFileSync(
      path.join(dir, "t", `s${i}.test.ts`),
      `import { test } from "bun:test";\ntest("short", async () => { await Bun.sleep(500); });\n`,
    );
  mkdirSync(path.join(dir, "empty"));
  writeFileSync(path.join(dir, "empty", "e.test.ts"), `import { test } from "bun:test";\ntest("e", () => {});\n`);
  const timings = path.join(dir, "timings.json");
  const m = await compare("p5", {
    startup: () => timed(sg(dir, "--jobs", "1", "empty"), dir),
    planOrder: () => timed(sg(dir, "--jobs", "2", "t"), dir),
    recorded: async () => {
      rmSync(timings, { force: true });
      await timed(sg(dir, "--jobs", "2", "--update-timings", timings, "t"), dir);
      return timed(sg(dir, "--jobs", "2", "--timings", timings, "t"), dir);
    },
  });
  const ideal = Math.max(3000, (3000 + 6 * 500) / 2) + m.startup!.ms;
  const r = m.recorded!.ms / ideal;
  rows.push(
    `| P5 one 3 s + six 0.5 s files, jobs 2 | ideal max(3 s, 6 s / 2) + start-up ${s(m.startup!.ms)} = ` +
      `${s(ideal)} | with --timings ${s(m.recorded!.ms)} ` +
      `(${r.toFixed(3)}×); plan order ${s(m.planOrder!.ms)} | ≤ 1.05× ${verdict(r <= 1.05)} |`,
  );
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `bun ${Bun.version}, ${os.cpus().length} cores, rounds ${ROUNDS}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log("| case | baseline (median) | shardguard (median, ratio) | target |");
console.log("|---|---|---|---|");
for (const row of rows) console.log(row);
process.exitCode = failed ? 1 : 0;
