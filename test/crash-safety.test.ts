/**
 * The runner itself dies (kill -9): its shards die with it (--no-orphans),
 * and the reports already on disk are valid and list the unfinished shards.
 */
import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { readReport, runCli, survivors, waitFor, removeSuites } from "./helpers/cli.ts";
import { makeSuite } from "./helpers/cli.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";

test("kill -9 of the runner mid-run: no shard process alive within 2 s, reports valid and honest", async () => {
  const slow = 'import { test } from "bun:test";\ntest("slow", async () => { await Bun.sleep(20_000); });\n';
  const dir = makeSuite({ "a.test.ts": 'import { test } from "bun:test";\ntest("quick", () => {});\n', "b.test.ts": slow, "c.test.ts": slow, "d.test.ts": slow });
  let killedAt = 0;
  const run = await runCli(["run", "--root", dir, "--jobs", "2", "--timeout", "60"], {
    onLine: {
      match: /START c\.test\.ts/,
      then: (pid) =>
        setTimeout(() => {
          killedAt = performance.now();
          process.kill(pid, "SIGKILL");
        }, 500),
    },
  });
  expect(run.signal).toBe("SIGKILL");
  const report = readReport(dir);
  // Within 2 s of the kill, nothing carrying this run's cookie is alive.
  const clean = await waitFor(() => survivors(report.runId).length === 0, Math.max(0, 2_000 - (performance.now() - killedAt)));
  expect(clean).toBe(true);

  expect(report.completed).toBe(false);
  expect(report.exitCode).toBeNull();
  expect(report.shards.map((s) => s.files[0])).toEqual(["a.test.ts", "b.test.ts", "c.test.ts", "d.test.ts"]);
  expect(report.shards[0]!.status).toBe("passed");
  const unfinished = report.shards.slice(1);
  for (const shard of unfinished) expect(shard.status).toBe("never-started");
  expect(unfinished.map((s) => s.reason)).toEqual([
    "still running when this report was written",
    "still running when this report was written",
    "queued: not started when this report was written",
  ]);
  const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
  expect((await validateJUnitXml(xml)).valid).toBe(true);
  expect(xml.match(/<testcase /g)?.length).toBe(4);
});

afterAll(removeSuites);
