/**
 * Drop-in parity on a whole public suite: every test's status under
 * shardguard's default run (one file per shard) against plain `bun test`
 * (one process), and the exit codes of both. A difference counts only where
 * the file run alone (`bun test FILE`) agrees with plain `bun test` twice:
 * then the file does not depend on sharing a process, and shardguard's
 * status is the one that is off.
 *
 *     bun bench/parity.ts [--source GIT] [--commit SHA] [--dir DIR] [--jobs 2] [--timeout 120] [--keep]
 *
 * `--dir` takes a suite already set up (dependencies installed) instead of
 * cloning `--source` at `--commit` (default: elysia at the commit of
 * bench/whole-suite.ts). Prints one line per step and the counted differences.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
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
const GIVEN = opt("--dir", "");
const JOBS = opt("--jobs", "2");
const TIMEOUT_S = opt("--timeout", "120");
const KEEP = argv.includes("--keep") || GIVEN !== "";

/** Plain `bun test` over `files` (all when empty): its statuses from its JUnit, and its exit code. */
function plain(dir: string, tag: string, files: string[] = []): { statuses: Statuses; code: number } {
  const xml = path.join(dir, `.parity-${tag}.xml`);
  // Bun writes no JUnit for a run that fails to load: an earlier run's file must not stand in for it.
  rmSync(xml, { force: true });
  const r = run(
    [BUN, "test", "--reporter=junit", `--reporter-outfile=${xml}`, ...files.map((f) => `./${f}`)],
    dir,
    false,
  );
  return { statuses: existsSync(xml) ? bunStatuses(xml) : new Map(), code: r.code };
}

const fileOf = (key: string) => key.slice(0, key.indexOf(" > "));

/**
 * shardguard's statuses plus its synthetic entries that did not pass (a
 * whole-file failure where Bun's JUnit has no testcase at all, e.g. a file
 * that registers no tests): plain `bun test` has no such entry.
 */
function shardguardView(reportFile: string): Statuses {
  const statuses = shardguardStatuses(reportFile);
  const report = JSON.parse(readFileSync(reportFile, "utf8")) as {
    shards: { tests: { file: string; name: string; status: string; synthetic: boolean }[] }[];
  };
  for (const shard of report.shards) {
    for (const t of shard.tests) {
      if (t.synthetic && !["passed", "skipped", "todo", "skipped-by-diff"].includes(t.status))
        statuses.set(`${t.file} > ${t.name}`, [t.status]);
    }
  }
  return statuses;
}

const dir = GIVEN === "" ? setUp(SOURCE, COMMIT) : path.resolve(GIVEN);
try {
  console.log(
    `suite: ${GIVEN || `${SOURCE} @ ${COMMIT.slice(0, 12)}`}; Bun ${Bun.version}; load ${os.loadavg()[0]!.toFixed(1)}`,
  );
  const whole = [plain(dir, "whole-1"), plain(dir, "whole-2")];
  const out = path.join(dir, ".parity-sg");
  const sg = run([BUN, CLI, "run", "--jobs", JOBS, "--timeout", TIMEOUT_S, "--out", out], dir, false);
  const sgStatuses = shardguardView(path.join(out, "report.json"));
  console.log(
    `exit codes: plain bun test ${whole[0]!.code} and ${whole[1]!.code}, shardguard ${sg.code}; ` +
      `${whole[0]!.statuses.size} tests in Bun's JUnit, ${sgStatuses.size} in shardguard's report`,
  );
  // Tests that differ between two plain runs are the suite's own flakiness.
  const flaky = new Set(
    differences(whole[0]!.statuses, whole[1]!.statuses).map((d) => d.slice(0, d.lastIndexOf(": "))),
  );
  // Bun's JUnit leaves out tests that never ran (under a failed beforeAll, after --bail): absent there is
  // never-started.
  const neverRan = (d: string) => d.endsWith(": absent vs never-started");
  const raw = differences(whole[0]!.statuses, sgStatuses, (k) => !flaky.has(k)).filter((d) => !neverRan(d));
  const files = [...new Set(raw.map(fileOf))];
  const counted: string[] = [];
  for (const file of files) {
    const alone = [plain(dir, "alone-1", [file]), plain(dir, "alone-2", [file])];
    const inFile = (k: string) => fileOf(k) === file && !flaky.has(k);
    const aloneAgrees = alone.every((a) => differences(whole[0]!.statuses, a.statuses, inFile).length === 0);
    // A whole-file failure (the file did not load) has no testcase in Bun's JUnit: Bun's exit code says it failed.
    const bunFailsFile = alone.every((a) => a.code !== 0 && a.statuses.size === 0);
    const here = raw.filter(
      (d) => fileOf(d) === file && !(bunFailsFile && d.includes(" > (whole file): absent vs failed")),
    );
    const verdict =
      here.length === 0
        ? "Bun fails the file too (exit code): none"
        : aloneAgrees
          ? "alone it agrees with plain bun test twice: counted"
          : "alone it differs from plain bun test: not counted";
    console.log(`${file}: ${here.length} difference(s); ${verdict}`);
    for (const d of here.slice(0, 5)) console.log(`  ${d}`);
    if (aloneAgrees) counted.push(...here);
  }
  const codes =
    whole[0]!.code === sg.code ? "equal exit codes" : `exit codes differ (${whole[0]!.code} against ${sg.code})`;
  console.log(`parity: ${counted.length} counted difference(s), ${flaky.size} flaky in plain bun test; ${codes}`);
} finally {
  if (!KEEP) rmSync(dir, { recursive: true, force: true });
}
