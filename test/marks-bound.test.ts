/**
 * The marks file lives where the test process can write it (its path is in
 * the child's environment as SHARDGUARD_MARKS), so a test can grow it without
 * bound; the runner reads at most MAX_MARKS_BYTES of it (runner/exec/marks.ts).
 */
import { afterAll, expect, test } from "bun:test";
import { truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { MAX_MARKS_BYTES, readMarks } from "../runner/exec/marks.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

test("readMarks stops at MAX_MARKS_BYTES: marks past it are not read", async () => {
  const dir = makeSuite({});
  const file = path.join(dir, "m.marks");
  writeFileSync(file, "ss");
  truncateSync(file, MAX_MARKS_BYTES + 10); // sparse: zeros, which are no marks
  writeFileSync(file, "e\nP 12 10 sleep 15", { flag: "a" });
  expect(await readMarks(file)).toEqual({
    testsStarted: 2,
    finishedNormally: false,
    descendants: [],
    filesStarted: [],
    filesLoaded: 0,
  });
});

test(
  "a marks file just under and just over the one-read size " +
    "(64 KiB) reads the same: files, starts, end, descendants",
  async () => {
    const dir = makeSuite({});
    for (const starts of [64 * 1024 - 200, 64 * 1024 + 200]) {
      const file = path.join(dir, `m${starts}.marks`);
      writeFileSync(
        file,
        `f/r/a.test.ts\0s${"s".repeat(starts - 2)}f/r/b.test.ts\0se\nP 12 10 sleep 15\nP 13 13 sh -c x`,
      );
      expect(await readMarks(file)).toEqual({
        testsStarted: starts,
        finishedNormally: true,
        descendants: [
          { pid: 12, pgid: 10, command: "sleep 15" },
          { pid: 13, pgid: 13, command: "sh -c x" },
        ],
        filesStarted: ["/r/a.test.ts", "/r/b.test.ts"],
        filesLoaded: 0,
      });
    }
  },
);

test("a test that grows its marks file to 64 GiB does not hold the run past its timeout", async () => {
  const dir = makeSuite({
    "forge.test.ts":
      'import { test } from "bun:test";\nimport { truncateSync } from "node:fs";\n' +
      'test("forge", () => { truncateSync(process.env.SHARDGUARD_MARKS!, 64 * 1024 ** 3); });\n',
  });
  const run = await runCli(["run", "--root", dir, "--timeout", "10", "--grace", "1"], { limitMs: 120_000 });
  // Reading 64 GiB of zeros took over a minute; the capped read takes about a second.
  expect(run.ms).toBeLessThan(15_000);
  // Its one test did pass (exit 0 and its events say so); the report still lists it.
  const report = readReport(dir);
  expect(report.shards[0]!.tests.map((t) => [t.name, t.status])).toEqual([["forge", "passed"]]);
}, 130_000);
