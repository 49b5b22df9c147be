/**
 * The log tail printed under a shard that did not pass: the shard's own
 * output, without the inspector banner Bun prints because shardguard asked
 * for its inspector (the log on disk keeps it).
 */
import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { logTail } from "../runner/report/console.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";

afterAll(removeSuites);

test("the tail leaves out Bun's three-line inspector banner and keeps every other line", async () => {
  const banner = "--------------------- Bun Inspector ---------------------\nListening on unix:/tmp/x/sock/3.sock\n--------------------- Bun Inspector ---------------------\n";
  const log = `bun test v1.4.4 (38afee6c8)\n${banner}\ntest/a.test.ts:\n(fail) a [1.00ms]\n--- Bun Inspector --- printed by a test\n`;
  const dir = makeSuite({ "shard.log": log });
  const tail = await logTail(path.join(dir, "shard.log"));
  expect(tail).toBe("bun test v1.4.4 (38afee6c8)\n\ntest/a.test.ts:\n(fail) a [1.00ms]\n--- Bun Inspector --- printed by a test");
  expect(readFileSync(path.join(dir, "shard.log"), "utf8")).toBe(log);
});
