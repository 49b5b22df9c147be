/**
 * `-t` / `--test-name-pattern` in a run with test events: Bun ends each test
 * the filter leaves out with the status `skipped_because_label` (events/wire.ts
 * BUN_END_STATUSES). Refused as an invalid event, it printed a schema warning
 * on every shard, and in a shard the runner killed the left-out tests were
 * reported never-started instead of skipped. On every supported Bun with
 * events (1.3.13 has none).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseInspectorMessage } from "../runner/events/wire.ts";
import { bunBinary, SUPPORTED_BUNS } from "./helpers/bun-versions.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

/** A checkout suite: a describe with an each-table, a test the filter keeps, and (wedged) one that spins. */
const suiteFiles = (wedged: boolean) => ({
  "cart.test.ts":
    'import { describe, expect, test } from "bun:test";\n' +
    'describe("cart", () => {\n' +
    '  test("adds an item", () => expect([1].length).toBe(1));\n' +
    '  test.each([[1], [2]])("removes item %i", (n) => expect(n).toBeGreaterThan(0));\n' +
    // The wedge never yields, so no timer stops it; it sleeps each turn so the five Buns' wedges hold no core.
    (wedged
      ? '  test("checkout wedges", () => { while (true) Bun.sleepSync(5); });\n'
      : '  test("checkout pays", () => expect(2 + 2).toBe(4));\n') +
    "});\n",
});

const statuses = (dir: string) =>
  Object.fromEntries(readReport(dir).shards.flatMap((s) => s.tests.map((t) => [t.name, t.status])));
const schemaNotes = (dir: string) =>
  readReport(dir)
    .shards.flatMap((s) => s.notes ?? [])
    .filter((n) => n.includes("did not match the event schema"));

describe("a run filtered by -t, with test events", () => {
  test("the wire schema takes Bun's skipped_because_label end", () => {
    const parsed = parseInspectorMessage(
      '{"method":"TestReporter.end","params":{"id":7,"status":"skipped_because_label","elapsed":0}}',
    );
    expect(parsed).toMatchObject({
      kind: "event",
      event: { method: "TestReporter.end", params: { id: 7, status: "skipped_because_label" } },
    });
  });

  for (const version of SUPPORTED_BUNS.filter((v) => v !== "1.3.13")) {
    test(`Bun ${version}: the left-out tests are skipped, as in Bun's JUnit, with no schema warning`, async () => {
      const bun = await bunBinary(version);
      const dir = makeSuite(suiteFiles(false));
      const run = await runCli(["run", "--root", dir, "--bun", bun, "--timeout", "30", "--", "-t", "adds|checkout"]);
      expect(run.code).toBe(0);
      expect(run.stdout).not.toContain("did not match the event schema");
      expect(schemaNotes(dir)).toEqual([]);
      expect(statuses(dir)).toEqual({
        "cart > adds an item": "passed",
        "cart > removes item 1": "skipped",
        "cart > removes item 2": "skipped",
        "cart > checkout pays": "passed",
      });
      // Bun's own JUnit of the shard says the same of the left-out tests.
      const runs = path.join(dir, ".shardguard", "runs");
      const junitDir = path.join(runs, readdirSync(runs)[0]!, "junit");
      const bunJunit = readFileSync(
        path.join(junitDir, readdirSync(junitDir).find((f) => f.endsWith(".xml"))!),
        "utf8",
      );
      expect(bunJunit.match(/<testcase name="removes item \d"[^>]*>\s*<skipped/g)?.length).toBe(2);
    }, 60_000);

    test(`Bun ${version}: in a shard killed at its timeout they are skipped, not never-started`, async () => {
      const bun = await bunBinary(version);
      const dir = makeSuite(suiteFiles(true));
      const run = await runCli([
        "run",
        "--root",
        dir,
        "--bun",
        bun,
        "--timeout",
        "3",
        "--grace",
        "1",
        "--",
        "-t",
        "adds|checkout",
      ]);
      expect(run.code).toBe(1);
      expect(schemaNotes(dir)).toEqual([]);
      expect(statuses(dir)).toEqual({
        "cart > adds an item": "passed",
        "cart > removes item 1": "skipped",
        "cart > removes item 2": "skipped",
        "cart > checkout wedges": "timed-out",
      });
    }, 60_000);
  }
});
