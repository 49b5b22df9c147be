/**
 * Tests longer than 2^31 ns (about 2.15 s) in a shard that is then killed or
 * cancelled keep the status Bun gave them, with their real duration, in
 * report.json, ctrf.json and junit.xml. Bun 1.4.4 sends a test's `elapsed`
 * as a wrapped signed 32-bit count of nanoseconds (2.5 s arrives negative,
 * 5 s as 0.7 s); its end event was once dropped for it and the test
 * reported in flight. Real CLI, real `bun test` children; the four runs go
 * side by side (each sleeps 7.5 s before its spin).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { makeSuite, readReport, removeSuites, runCli, waitFor, type CliRun } from "./helpers/cli.ts";
import { threeReports, type ShownTest } from "./helpers/three-reports.ts";

afterAll(removeSuites);

const SERIAL = `import { test } from "bun:test";
test("slow 2.5 s", async () => { await Bun.sleep(2500); });
test("slow 5 s", async () => { await Bun.sleep(5000); }, 60_000);
test("then the thread spins", () => { while (true) {} });
test("after never runs", () => {});
`;

// A 5 s sleep needs its own per-test timeout: Bun's default is 5 s, which it would
// reach under load.

// With --retry: the first attempt fails after 2.5 s, the second passes after 5 s.
const RETRIED = `import { test } from "bun:test";
let attempt = 0;
test("flaky slow", async () => {
  attempt += 1;
  if (attempt === 1) { await Bun.sleep(2500); throw new Error("first attempt fails"); }
  await Bun.sleep(5000);
}, 60_000);
test("then the thread spins", () => { while (true) {} });
test("after never runs", () => {});
`;

// Under --concurrent every test starts at once: the spin waits for both sleeps to end first.
const CONCURRENT = `import { test } from "bun:test";
test("slow 2.5 s", async () => { await Bun.sleep(2500); });
test("slow 5 s", async () => { await Bun.sleep(5000); }, 60_000);
test("then the thread spins", async () => { await Bun.sleep(5600); while (true) {} }, 60_000);
test("quick", () => {});
`;

const TIMEOUT = ["--timeout", "11", "--grace", "1"];

/** The events journal of the run in `dir`, or "" before it exists. */
function journalText(dir: string): string {
  const runs = path.join(dir, ".shardguard", "runs");
  try {
    for (const run of readdirSync(runs)) {
      const logs = path.join(runs, run, "logs");
      for (const f of readdirSync(logs))
        if (f.endsWith(".events.jsonl")) return readFileSync(path.join(logs, f), "utf8");
    }
  } catch {
    // not there yet
  }
  return "";
}

/** `[name, status]` of each shown test, and every duration checked against `expected` (ms, by name). */
function checked(shown: ShownTest[], expected: Record<string, number>): string[][] {
  for (const t of shown) {
    const ms = expected[t.name];
    if (ms === undefined) continue;
    // Sane: at least the sleep, and not a wrapped or whole-shard time.
    expect({ name: t.name, ms: t.durationMs, ok: t.durationMs >= ms - 1 && t.durationMs < ms + 1500 }).toEqual({
      name: t.name,
      ms: t.durationMs,
      ok: true,
    });
  }
  return shown.map((t) => [t.name, t.status]);
}

describe("tests of 2.5 s and 5 s, then a spin: the ended tests stay passed with their durations", () => {
  const dirs = {
    timeout: makeSuite({ "slow.test.ts": SERIAL }),
    cancel: makeSuite({ "slow.test.ts": SERIAL }),
    retry: makeSuite({ "slow.test.ts": RETRIED }),
    concurrent: makeSuite({ "slow.test.ts": CONCURRENT }),
  };
  const runs: Partial<Record<keyof typeof dirs, CliRun>> = {};

  beforeAll(async () => {
    const cancel = async () => {
      let sent = false;
      const run = runCli(["run", "--root", dirs.cancel, "--timeout", "60", "--grace", "1"], {
        onLine: {
          match: /START/,
          act: (pid) => {
            // SIGINT once the spin has started (its start event is in the journal).
            void waitFor(
              () => journalText(dirs.cancel).includes('"TestReporter.start","params":{"id":3}'),
              30_000,
              100,
            ).then(() => {
              sent = true;
              process.kill(pid, "SIGINT");
            });
          },
        },
      });
      const done = await run;
      expect(sent).toBe(true);
      return done;
    };
    const [timeout, cancelled, retry, concurrent] = await Promise.all([
      runCli(["run", "--root", dirs.timeout, ...TIMEOUT]),
      cancel(),
      runCli(["run", "--root", dirs.retry, ...TIMEOUT, "--", "--retry", "1"]),
      runCli(["run", "--root", dirs.concurrent, ...TIMEOUT, "--", "--concurrent"]),
    ]);
    Object.assign(runs, { timeout, cancel: cancelled, retry, concurrent });
  }, 90_000);

  test("killed by --timeout: passed, passed, timed-out, never-started in all three reports", async () => {
    expect(runs.timeout!.code).toBe(1);
    const reports = await threeReports(dirs.timeout);
    const expected = [
      ["slow 2.5 s", "passed"],
      ["slow 5 s", "passed"],
      ["then the thread spins", "timed-out"],
      ["after never runs", "never-started"],
    ];
    for (const shown of Object.values(reports))
      expect(checked(shown, { "slow 2.5 s": 2500, "slow 5 s": 5000 })).toEqual(expected);
    expect(readReport(dirs.timeout).shards[0]!.notes).toBeUndefined();
  });

  test("cancelled by SIGINT: the ended tests passed, the spin crashed, exit 130", async () => {
    expect(runs.cancel!.code).toBe(130);
    const reports = await threeReports(dirs.cancel);
    const expected = [
      ["slow 2.5 s", "passed"],
      ["slow 5 s", "passed"],
      ["then the thread spins", "crashed"],
      ["after never runs", "never-started"],
    ];
    for (const shown of Object.values(reports))
      expect(checked(shown, { "slow 2.5 s": 2500, "slow 5 s": 5000 })).toEqual(expected);
    expect(runs.cancel!.stdout).not.toContain("crashed     slow");
  });

  test("with --retry 1: the retried test is passed and flaky, its final attempt's 5 s its duration", async () => {
    const reports = await threeReports(dirs.retry);
    const expected = [
      ["flaky slow", "passed"],
      ["then the thread spins", "timed-out"],
      ["after never runs", "never-started"],
    ];
    for (const shown of Object.values(reports)) expect(checked(shown, { "flaky slow": 5000 })).toEqual(expected);
    const flaky = readReport(dirs.retry).shards[0]!.tests[0]!;
    expect([flaky.retries, flaky.flaky, flaky.attemptFailures[0]?.message]).toEqual([1, true, "first attempt fails"]);
  });

  test("under --concurrent: both sleeps passed while running side by side, the spin timed-out", async () => {
    const reports = await threeReports(dirs.concurrent);
    const expected = [
      ["slow 2.5 s", "passed"],
      ["slow 5 s", "passed"],
      ["then the thread spins", "timed-out"],
      ["quick", "passed"],
    ];
    for (const shown of Object.values(reports))
      expect(checked(shown, { "slow 2.5 s": 2500, "slow 5 s": 5000 })).toEqual(expected);
  });
});
