/**
 * The log tail printed under a shard that did not pass: the shard's own
 * output, without the inspector banner Bun prints because shardguard asked
 * for its inspector (the log on disk keeps it).
 */
import { afterAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { logTail } from "../runner/report/console.ts";
import { makeSuite, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const DASHES = "--------------------- Bun Inspector ---------------------\n";
const LISTENING = "Listening on unix:/tmp/x/sock/3.sock\n";

// Through pipes Bun's listening line came between the dashes; with the log as
// the child's own stdout and stderr it comes after both (seen in a real log).
test.each([
  ["listening between", DASHES + LISTENING + DASHES],
  ["listening after", DASHES + DASHES + LISTENING],
  ["listening before", LISTENING + DASHES + DASHES],
])("the tail leaves out Bun's three-line inspector banner (%s) and keeps every other line", async (_order, banner) => {
  const log =
    `bun test v1.4.4 (38afee6c8)\n${banner}\ntest/a.test.ts:\n` +
    `(fail) a [1.00ms]\n--- Bun Inspector --- printed by a test\n`;
  const dir = makeSuite({ "shard.log": log });
  const tail = await logTail(path.join(dir, "shard.log"));
  expect(tail).toBe(
    "bun test v1.4.4 (38afee6c8)\n\ntest/a.test.ts:\n(fail) a [1.00ms]\n--- Bun Inspector --- printed by a test",
  );
  expect(readFileSync(path.join(dir, "shard.log"), "utf8")).toBe(log);
});

test("a real shard's tail on the console and its log have the test's output and no inspector banner", async () => {
  const dir = makeSuite({
    "t/fails.test.ts":
      'import { expect, test } from "bun:test";\ntest("fails on purpose", () => {\n' +
      '  console.log("own line of the test");\n  expect(1).toBe(2);\n});\n',
  });
  const run = await runCli(["run", "--root", dir, "--out", path.join(dir, ".sg"), "--jobs", "1", "t"]);
  expect(run.code).toBe(1);
  expect(run.stdout).toContain("own line of the test");
  expect(run.stdout).toContain("(fail) fails on purpose");
  expect(run.stdout).not.toContain("Bun Inspector");
  expect(run.stdout).not.toContain("Listening on unix:");
  // Nor the log on disk: a child in Bun's connect mode (BUN_INSPECT_CONNECT_TO)
  // prints no banner, so the log is what plain `bun test` prints.
  const logs = path.join(dir, ".sg", "runs");
  const runDir = path.join(logs, readdirSync(logs)[0]!, "logs");
  const log = readFileSync(path.join(runDir, readdirSync(runDir).find((f) => f.endsWith(".log"))!), "utf8");
  expect(log).toContain("(fail) fails on purpose");
  expect(log).not.toContain("Bun Inspector");
});
