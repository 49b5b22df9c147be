/**
 * `--files-per-shard auto` without `--isolate` (docs/sharding.md, "Batches of many small files"): the files of a
 * batch share one process and its module cache, as in plain `bun test`, so a module's state set by one file is seen
 * by the next; a `while (true) {}` file costs its own verdict and its batch's timeout, and the files its batch never
 * reached run again as a batch. Real children on the pinned Bun and on 1.3.3 (no `--isolate` there).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { bunBinary } from "./helpers/bun-versions.ts";
import type { RunReport } from "../runner/results/report-model.ts";

afterAll(removeSuites);

// A module every file imports: its counter lives as long as the process (the batch).
const shared = "export const state = { loaded: 0 };\n";
const counting = (i: number) =>
  `import { test, expect } from "bun:test";\nimport { state } from "./shared.ts";\nstate.loaded += 1;\n` +
  `test("sees earlier files ${i}", () => expect(state.loaded).toBeGreaterThan(${i === 1 ? 0 : 1}));\n`;
const wedged = `import { test } from "bun:test";\ntest("before", () => {});\ntest("spins", () => { while (true) {} });\n`;

/** Eight files, the first the only one that may see a fresh module; f04 wedges when asked. */
function suite(withWedge: boolean): Record<string, string> {
  const files: Record<string, string> = { "t/shared.ts": shared };
  for (let i = 1; i <= 8; i++) files[`t/f0${i}.test.ts`] = counting(i);
  if (withWedge) files["t/f04.test.ts"] = wedged;
  return files;
}

const statuses = (report: RunReport) =>
  Object.fromEntries(report.shards.flatMap((s) => s.tests).map((t) => [`${t.file} > ${t.name}`, t.status]));
const args = (dir: string, bun: string[]) => [
  "run",
  "--root",
  dir,
  "--jobs",
  "1",
  "--files-per-shard",
  "auto",
  "--timeout",
  "4",
  "--grace",
  "1",
  ...bun,
  "t",
];

for (const version of ["pinned", "1.3.3"] as const) {
  describe(`shared auto batches on Bun ${version}`, () => {
    const bunArgs = async () => (version === "pinned" ? [] : ["--bun", await bunBinary(version)]);

    test("one batch: every file after the first sees the module state of the files before it", async () => {
      const dir = makeSuite(suite(false));
      const run = await runCli(args(dir, await bunArgs()));
      const report = readReport(dir);
      expect(report.shards).toHaveLength(1);
      expect(report.settings.bunArgs).not.toContain("--isolate");
      expect(Object.values(statuses(report))).toEqual(new Array(8).fill("passed"));
      expect(run.code).toBe(0);
    }, 60_000);

    test("a wedged file: timed-out alone; files before keep their passes; the files after it run again as one " +
      "batch, its first file now seeing a fresh module as when run alone", async () => {
      const dir = makeSuite(suite(true));
      const run = await runCli(args(dir, await bunArgs()));
      expect(run.code).toBe(1);
      const report = readReport(dir);
      expect(report.shards.map((s) => s.files)).toEqual([
        ["t/f01.test.ts", "t/f02.test.ts", "t/f03.test.ts", "t/f04.test.ts"],
        ["t/f05.test.ts", "t/f06.test.ts", "t/f07.test.ts", "t/f08.test.ts"],
      ]);
      expect(report.shards[0]!.status).toBe("timed-out");
      expect(report.shards[0]!.reason).toContain("4 files in which no test started run again in shard 2");
      const seen = statuses(report);
      expect(seen).toEqual({
        "t/f01.test.ts > sees earlier files 1": "passed",
        "t/f02.test.ts > sees earlier files 2": "passed",
        "t/f03.test.ts > sees earlier files 3": "passed",
        "t/f04.test.ts > before": "passed",
        "t/f04.test.ts > spins": "timed-out",
        // In the re-dispatched batch f05 is first: it sees a fresh module, like a file run alone.
        "t/f05.test.ts > sees earlier files 5": "failed",
        "t/f06.test.ts > sees earlier files 6": "passed",
        "t/f07.test.ts > sees earlier files 7": "passed",
        "t/f08.test.ts > sees earlier files 8": "passed",
      });
    }, 90_000);
  });
}

test("recorded work past the shard timeout is split into batches a quarter of it, so no passing file is killed", async () => {
  const slow = (i: number) =>
    `import { test } from "bun:test";\ntest("slow ${i}", async () => { await Bun.sleep(1200); });\n`;
  const files: Record<string, string> = {};
  const durations: Record<string, number> = {};
  for (let i = 1; i <= 6; i++) {
    files[`t/s${i}.test.ts`] = slow(i);
    durations[`t/s${i}.test.ts`] = 1200;
  }
  const dir = makeSuite(files);
  writeFileSync(path.join(dir, "timings.json"), JSON.stringify({ version: 1, files: durations }));
  // 7.2 s over 2 jobs would be two 3.6 s batches under a 3 s timeout; capped at 0.75 s, each file runs alone.
  const run = await runCli(
    ["run", "--root", dir, "--jobs", "2", "--files-per-shard", "auto", "--timeout", "3", "--grace", "1"].concat([
      "--timings",
      path.join(dir, "timings.json"),
      "--no-history",
      "t",
    ]),
    { limitMs: 60_000 },
  );
  const report = readReport(dir);
  expect(report.shards.map((s) => s.status)).toEqual(new Array(6).fill("passed"));
  expect(run.code).toBe(0);
}, 60_000);
