/**
 * A file without tests inside a batched shard (`--files-per-shard 10`), on
 * real children, with events on and off: an empty file, as plain `bun test`
 * counts it, and under `--empty-files fail` a failure whose reason keeps the
 * hint a shard of its own gives (the setting, not Bun's `--pass-with-no-tests`).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const PASSES = `import { expect, test } from "bun:test";\ntest("passes", () => expect(1).toBe(1));\n`;
const FAILS = `import { expect, test } from "bun:test";\ntest("fails", () => expect(1).toBe(2));\n`;
// Shaped like a real file whose tests were commented out for a while.
const COMMENTED_OUT =
  `import { expect, test } from "bun:test";\n\n// test("flaky on CI", async () => {\n` +
  `//   expect(await Promise.resolve(1)).toBe(1);\n// });\n`;
const HINT = '(empty-files = "fail"; --empty-files pass allows it)';

describe.each([["on"], ["off"]])("a batch of 10 files per shard, events %s", (mode) => {
  const events = mode === "off" ? ["--no-test-events"] : [];
  /** Runs `files` as one batched shard through the real CLI; the run's exit code, stdout and its one shard. */
  const runBatch = async (files: Record<string, string>, bunArgs: string[] = []) => {
    const dir = makeSuite(files);
    const r = await runCli(["run", "--root", dir, "--files-per-shard", "10", ...events, "t", ...bunArgs]);
    return { code: r.code, stdout: r.stdout, shard: readReport(dir).shards[0]! };
  };

  test("an empty file beside passing ones: the batch passes and the reason names the file", async () => {
    const { code, shard } = await runBatch({
      "t/a.test.ts": PASSES,
      "t/b-empty.test.ts": COMMENTED_OUT,
      "t/c.test.ts": PASSES,
    });
    expect(code).toBe(0);
    expect([shard.status, shard.reason]).toEqual([
      "passed",
      "all tests passed; no tests in t/b-empty.test.ts (an empty file)",
    ]);
    expect(shard.tests.find((t) => t.file === "t/b-empty.test.ts")).toMatchObject({
      status: "skipped",
      failure: { type: "no-tests" },
    });
  });

  test("under --empty-files fail, an empty file beside passing ones: failed, the reason gives the hint", async () => {
    const files = { "t/a.test.ts": PASSES, "t/b-empty.test.ts": COMMENTED_OUT, "t/c.test.ts": PASSES };
    const { code, stdout, shard } = await runBatch(files, ["--empty-files", "fail"]);
    expect(code).toBe(1);
    expect(shard.status).toBe("failed");
    expect(shard.reason).toBe(`no tests found in t/b-empty.test.ts ${HINT}`);
    expect(shard.tests.find((t) => t.file === "t/b-empty.test.ts")).toMatchObject({
      status: "failed",
      failure: { type: "no-tests" },
    });
    expect(stdout).toContain(`FAILED 0`);
    expect(stdout).toContain(HINT);
  });

  // Bun exits 1 for the failing test, and sends no event for an unresolvable
  // import either: the empty file cannot be told from one that failed to load.
  test(
    "an empty file beside a failing one: the failures are " +
      "counted without it, then the file, not called a load error",
    async () => {
      const { code, shard } = await runBatch({
        "t/a.test.ts": PASSES,
        "t/b-empty.test.ts": COMMENTED_OUT,
        "t/c.test.ts": FAILS,
      });
      expect(code).toBe(1);
      expect(shard.reason).toBe(
        "1 test failed; no test registered in t/b-empty.test.ts (no tests, or a load error: see the log)",
      );
      const empty = shard.tests.find((t) => t.file === "t/b-empty.test.ts")!;
      expect([empty.status, empty.failure?.type]).toEqual(["failed", "no-tests"]);
      expect(empty.failure?.message).toContain("no tests found, or the file failed to load");
    },
  );

  test("a file that fails to load beside a failing one: failed, its own entry failed too", async () => {
    const broken = `import { test } from "bun:test";
import "./no-such-module";
test("never", () => {});
`;
    const { code, shard } = await runBatch({ "t/a.test.ts": FAILS, "t/b-broken.test.ts": broken });
    expect(code).toBe(1);
    expect(shard.status).toBe("failed");
    expect(shard.tests.find((t) => t.file === "t/b-broken.test.ts")!.status).toBe("failed");
  });

  test("under --empty-files fail, --pass-with-no-tests still lets the batch pass, naming the file", async () => {
    const { code, shard } = await runBatch({ "t/a.test.ts": PASSES, "t/b-empty.test.ts": COMMENTED_OUT }, [
      "--empty-files",
      "fail",
      "--",
      "--pass-with-no-tests",
    ]);
    expect(code).toBe(0);
    expect(shard.reason).toBe("all tests passed; no tests in t/b-empty.test.ts (--pass-with-no-tests)");
  });
});
