/**
 * The run history on a real PostgreSQL server (Debian's postgresql, started by test/helpers/postgres.ts): the
 * done-when flow of test/history.test.ts, quarantine, four concurrent writers, and an unreachable server.
 */
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { flakySuite, historyJson, runSuite, threeRuns } from "./helpers/history-suite.ts";
import { startPostgres } from "./helpers/postgres.ts";

const pg = startPostgres();
afterAll(() => {
  if ("url" in pg) pg.stop();
  removeSuites();
});

if ("skip" in pg) {
  // Visible in the run's output: why these tests did not run.
  test.skip(`PostgreSQL history tests (no server: ${pg.skip})`, () => {});
} else {
  const url = pg.url;
  // A fresh database per test keeps the runs of one test apart from the others.
  let n = 0;
  const freshDatabase = async (): Promise<string> => {
    const name = `sg_test_${++n}`;
    const { SQL } = await import("bun");
    const admin = new SQL(url);
    await admin.unsafe(`CREATE DATABASE ${name}`);
    await admin.close();
    return url.replace("/postgres?", `/${name}?`);
  };

  describe("run history (PostgreSQL)", () => {
    test("three runs: --flaky lists exactly the flaky test, --failing the stable failure since run 1", async () => {
      const db = await freshDatabase();
      const dir = flakySuite(true);
      const ids = await threeRuns(dir, ["--history", db]);
      const flaky = (await historyJson(dir, ["--flaky", "--history", db])).flaky as {
        test: string;
        flipRate: number;
      }[];
      expect(flaky.map((f) => f.test)).toEqual(["a.test.ts > flaky"]);
      expect(flaky[0]!.flipRate).toBe(1);
      const failing = (await historyJson(dir, ["--failing", "--history", db])).failing as {
        test: string;
        since: { runId: string };
      }[];
      expect(failing.map((f) => f.test)).toEqual(["a.test.ts > stable failure"]);
      expect(failing[0]!.since.runId).toBe(ids[0]!);
    }, 240_000);

    test("quarantine = auto quarantines the flaky test from the history: its failure leaves exit 0", async () => {
      const db = await freshDatabase();
      const dir = flakySuite(false, `[shardguard]\nquarantine = "auto"\n`);
      // Passes, fails (exit 1: not flaky yet), passes; then the fourth run fails quarantined.
      const codes: (number | null)[] = [];
      for (let i = 0; i < 4; i++) codes.push((await runSuite(dir, ["--history", db])).code);
      expect(codes).toEqual([0, 1, 0, 0]);
      const flakyTest = readReport(dir)
        .shards.flatMap((s) => s.tests)
        .find((t) => t.name === "flaky")!;
      expect(flakyTest.status).toBe("failed");
      expect(flakyTest.quarantined).toBe(true);
    }, 240_000);

    test("four concurrent writers (slices) lose no run", async () => {
      const db = await freshDatabase();
      const files: Record<string, string> = {};
      for (let i = 1; i <= 8; i++)
        files[`t${i}.test.ts`] = `import { test } from "bun:test";\ntest("t${i}", () => {});\n`;
      const dir = makeSuite(files);
      const runs = await Promise.all(
        [1, 2, 3, 4].map((i) =>
          runCli(["run", "--root", dir, "--jobs", "1", "--shard", `${i}/4`, "--out", path.join(dir, `out${i}`)], {
            env: { SHARDGUARD_HISTORY_URL: db },
            limitMs: 120_000,
          }),
        ),
      );
      expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0]);
      for (const r of runs) expect(r.stdout).not.toContain("note: run history");
      const list = (await historyJson(dir, ["--runs", "--history", db])).list as { slice: string }[];
      expect(list.map((r) => r.slice).sort()).toEqual(["1/4", "2/4", "3/4", "4/4"]);
    }, 240_000);

    test("a server that is not there is one note; the run's exit code is unchanged", async () => {
      const dir = makeSuite({ "a.test.ts": `import { test } from "bun:test";\ntest("ok", () => {});\n` });
      const gone = url.replace(/:(\d+)\//, ":1/");
      const r = await runSuite(dir, ["--history", gone]);
      expect(r.code).toBe(0);
      expect(r.stdout.match(/shardguard: note: run history .* not used/g)?.length).toBe(1);
    }, 120_000);
  });
}
