/**
 * Failure messages on the console (runner/report/console.ts): a message
 * shown in part, cut at its width or with lines left out, is always marked
 * as cut with "…" and names where the whole text is; one shown whole is not.
 * Render functions over the result model, plus one real run.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { endLine, summaryLines } from "../runner/report/console.ts";
import { failedShard, makeReport, makeTest } from "./helpers/report-fixtures.ts";
import { makeSuite, removeSuites, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const PATHS = { junit: "j.xml", json: "r.json", ctrf: "c.json" };
const FILE = "test/config.test.ts";

/** A shard with one failed test whose failure message is `message`. */
function shardFailing(message: string) {
  return failedShard(1, [
    makeTest({
      name: "rejects bad statuses",
      file: FILE,
      status: "failed",
      failure: { type: "failure", errorName: "Error", message },
    }),
  ]);
}

/** The console lines that name the failed test: the shard's end line and the closing list. */
function failureLines(message: string): string[] {
  const shard = shardFailing(message);
  const lines = [...endLine(shard, 1).split("\n"), ...summaryLines(makeReport([shard]), PATHS)];
  return lines.filter((l) => l.includes("rejects bad statuses"));
}

describe("a failure message on the console", () => {
  test("longer than the width: cut with an ellipsis, and the closing list names the log", () => {
    const long = `invalid value for "statuses": ${"passed,failed,".repeat(20)}Y`;
    const [end, closing] = failureLines(long);
    for (const line of [end!, closing!]) {
      expect(line).toContain(': invalid value for "statuses": passed,failed,');
      expect(line).toContain("…");
      expect(line).not.toContain(",Y");
    }
    expect(closing).toEndWith("… (full text: .shardguard/logs/1.log)");
    // The end line sits above the shard's "full log:" line, which names the same file.
    expect(endLine(shardFailing(long), 1)).toContain("\n    full log: .shardguard/logs/1.log");
  });

  test("with Expected/Received after the first line: those lines under it, whole, no ellipsis", () => {
    const shard = shardFailing("expect(received).toBe(expected)\n\nExpected: 2\nReceived: 1\n");
    for (const block of [endLine(shard, 1), summaryLines(makeReport([shard]), PATHS).join("\n")]) {
      expect(block).toContain(
        "rejects bad statuses: expect(received).toBe(expected)\n        | Expected: 2\n        | Received: 1\n",
      );
      expect(block).not.toContain("…");
    }
  });

  test("more lines than the bound: the first ones, then an ellipsis and the log", () => {
    const message = ["first", ...Array.from({ length: 14 }, (_, i) => `line ${i + 1}`)].join("\n");
    const closing = summaryLines(makeReport([shardFailing(message)]), PATHS).join("\n");
    expect(closing).toContain("rejects bad statuses: first\n        | line 1\n");
    expect(closing).toContain("        | line 10 … (full text: .shardguard/logs/1.log)\n");
    expect(closing).not.toContain("line 11");
  });

  test("Bun's JUnit failure text as details: its Expected/Received shown, its stack frames not", () => {
    const shard = failedShard(1, [
      makeTest({
        name: "rejects bad statuses",
        file: FILE,
        status: "failed",
        failure: {
          type: "failure",
          message: "expect(received).toBe(expected)",
          details:
            "expect(received).toBe(expected)\n\nExpected: 2\nReceived: 1\n\n      at <anonymous> (/x/a.test.ts:3:13)\n",
        },
      }),
    ]);
    const end = endLine(shard, 1);
    expect(end).toContain(
      ": expect(received).toBe(expected)\n        | Expected: 2\n        | Received: 1\n    full log:",
    );
    expect(end).not.toContain("<anonymous>");
  });

  test("shown whole: no ellipsis, no log path", () => {
    const [end, closing] = failureLines("boom\n");
    expect(end).toEndWith("rejects bad statuses: boom");
    expect(closing).toEndWith("rejects bad statuses: boom");
  });

  test("exactly as wide as the width, astral characters counted once: whole", () => {
    const [end] = failureLines("😀".repeat(160));
    expect(end).toEndWith(`: ${"😀".repeat(160)}`);
    const [cut] = failureLines("😀".repeat(161));
    expect(cut).toEndWith(`: ${"😀".repeat(160)}…`);
  });
});

test("a real run: a long single-line failure is cut and marked on the console", async () => {
  const dir = makeSuite({
    "t/long.test.ts":
      `import { test } from "bun:test";\n` +
      `test("long", () => { throw new Error("bad value: " + "x".repeat(400) + " END"); });\n`,
  });
  const r = await runCli(["run", "--root", dir, "--out", `${dir}/.sg`, "t"]);
  expect(r.code).toBe(1);
  const lines = r.stdout.split("\n").filter((l) => l.includes("long: bad value:"));
  expect(lines).toHaveLength(2);
  for (const line of lines) {
    expect(line).toContain("x…");
    expect(line).not.toContain(" END");
  }
  expect(lines[1]).toMatch(/… \(full text: .*shard-1-t-long\.log\)$/);
});
