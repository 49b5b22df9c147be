/**
 * A console whose reader goes away (`shardguard run | head -1`): the run
 * loses its console lines, never its shards or its reports
 * (cli/process-host.ts). Before, the first line after the reader left threw
 * EPIPE out of the run and no report was written.
 */
import { afterAll, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { CLI, fixtureFiles, makeSuite, readReport, removeSuites, withoutCiVariables } from "./helpers/cli.ts";

afterAll(removeSuites);

test("stdout closed after the first line: the run goes on to its exit code and writes every report", async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 12; i++) files[`p${i}.test.ts`] = fixtureFiles("pass")["pass.test.ts"]!;
  files["fail.test.ts"] = fixtureFiles("fail")["fail.test.ts"]!;
  const dir = makeSuite(files);
  const child = spawn(process.execPath, [CLI, "run", "--root", dir, "--jobs", "2"], {
    env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  // The reader leaves after the first line, as `head -1` does.
  child.stdout.once("data", () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  expect(stderr).not.toContain("EPIPE");
  expect(code).toBe(1);
  const report = readReport(dir);
  expect(report.completed).toBe(true);
  expect(report.shards).toHaveLength(13);
  expect(report.shards.filter((s) => s.status === "passed")).toHaveLength(12);
  expect(report.shards.find((s) => s.files[0] === "fail.test.ts")!.status).toBe("failed");
}, 60_000);
