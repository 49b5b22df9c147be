/**
 * renderJson, the committed JSON Schema, and writeFileAtomic.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { pollForTornReads } from "./helpers/torn-reads.ts";
import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ZodError } from "zod";
import { RunReportSchema, type RunReport } from "../runner/results/report-model.ts";
import { writeFileAtomic } from "../runner/util/atomic.ts";
import { renderJson } from "../runner/report/json.ts";
import { REPORT_SCHEMA_PATH, reportJsonSchema, reportJsonSchemaText } from "../runner/report/json-schema.ts";
import { failedShard, makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";
import { removeSuites, tempDir as makeTempDir } from "./helpers/cli.ts";

afterAll(removeSuites);
const tempDir = () => makeTempDir("sg-report-json-");

const HOSTILE_NAME = "n\x00\x1b[31mame \uD800 \u{1F600} ]]> <&>";

function sampleReport(): RunReport {
  return makeReport([
    failedShard(1, [
      makeTest({ name: HOSTILE_NAME, file: "t/a.test.ts" }),
      makeTest({
        name: "fails",
        file: "t/a.test.ts",
        status: "failed",
        failure: {
          type: "failure",
          errorName: "AssertionError",
          message: "\x1b[31mexpected\x1b[39m 1",
          details: "\x1b]8;;https://x\x07link\x1b]8;;\x07 at a:1",
        },
      }),
      makeTest({
        name: "flaky",
        file: "t/a.test.ts",
        flaky: true,
        retries: 1,
        attemptFailures: [{ type: "failure", errorName: "Error", message: "\x1b[2Kfirst try" }],
      }),
    ]),
    makeShard({
      index: 2,
      status: "never-started",
      exitCode: null,
      startedAt: null,
      logPath: null,
      durationMs: 0,
      reason: "cancelled",
      files: ["t/b.test.ts"],
    }),
  ]);
}

describe("renderJson", () => {
  const report = sampleReport();
  const text = renderJson(report);
  const parsed = RunReportSchema.parse(JSON.parse(text));

  test("round-trips through RunReportSchema; 2-space indent and trailing newline", () => {
    expect(text).toEndWith("}\n");
    expect(text.split("\n")[1]).toStartWith('  "schemaVersion": 2');
    expect(parsed.shards.length).toBe(2);
    expect(parsed.summary).toEqual(report.summary);
  });

  test("names stay exactly as written, even characters XML could not carry", () => {
    expect(parsed.shards[0]?.tests[0]?.name).toBe(HOSTILE_NAME);
  });

  test("escape sequences are stripped from failure texts only", () => {
    const [, fails, flaky] = parsed.shards[0]?.tests ?? [];
    expect(fails?.failure).toEqual({
      type: "failure",
      errorName: "AssertionError",
      message: "expected 1",
      details: "link at a:1",
    });
    expect(flaky?.attemptFailures).toEqual([{ type: "failure", errorName: "Error", message: "first try" }]);
    expect(text).not.toContain("\\u001b[31mexpected");
    // The input object is not modified.
    expect(report.shards[0]?.tests[1]?.failure?.message).toBe("\x1b[31mexpected\x1b[39m 1");
  });

  test("defaults are filled in; an invalid report throws ZodError", () => {
    const withoutDefaults = structuredClone(report) as unknown as { shards: { tests: Record<string, unknown>[] }[] };
    const first = withoutDefaults.shards[0]?.tests[0];
    if (first !== undefined) {
      delete first.retries;
      delete first.synthetic;
    }
    const out = JSON.parse(renderJson(withoutDefaults as unknown as RunReport));
    expect(out.shards[0].tests[0].retries).toBe(0);
    expect(out.shards[0].tests[0].synthetic).toBe(false);

    const broken = { ...report, durationMs: -1 };
    expect(() => renderJson(broken)).toThrow(ZodError);
    expect(() => renderJson({ ...report, shards: [{ ...report.shards[0], files: [] }] } as RunReport)).toThrow(
      ZodError,
    );
  });
});

describe("docs/report.schema.json", () => {
  test("the committed file is the current generation (run `bun runner/report/json-schema.ts` to refresh)", () => {
    const committed = readFileSync(join(import.meta.dir, "..", REPORT_SCHEMA_PATH), "utf8");
    expect(JSON.parse(committed)).toEqual(reportJsonSchema());
    expect(committed).toBe(reportJsonSchemaText());
  });

  test("describes the output side: defaulted fields are required", () => {
    const schema = reportJsonSchema() as {
      properties: { shards: { items: { properties: { tests: { items: { required: string[] } } } } } };
    };
    const required = schema.properties.shards.items.properties.tests.items.required;
    expect(required).toEqual(
      expect.arrayContaining(["name", "status", "retries", "flaky", "attemptFailures", "synthetic"]),
    );
  });
});

describe("writeFileAtomic", () => {
  test("creates parent directories; writes strings as UTF-8 and bytes as is; applies mode", async () => {
    const dir = tempDir();
    const target = join(dir, "a", "b", "report.json");
    await writeFileAtomic(target, "h\u00e9llo \u{1F600}\n", 0o600);
    expect(readFileSync(target, "utf8")).toBe("h\u00e9llo \u{1F600}\n");
    expect(statSync(target).mode & 0o777).toBe(0o600);
    await writeFileAtomic(target, new Uint8Array([0, 1, 2, 255]));
    expect([...readFileSync(target)]).toEqual([0, 1, 2, 255]);
    expect(readdirSync(join(dir, "a", "b"))).toEqual(["report.json"]);
  });

  test("concurrent writers: readers only ever see a complete version; no temp files left", async () => {
    const dir = tempDir();
    const target = join(dir, "junit.xml");
    // 1 MB payloads rewritten in rounds while four readers poll: with a plain
    // fs.writeFile in place of writeFileAtomic this sees torn reads every run.
    const payloads = Array.from(
      { length: 8 },
      (_, i) => `<${i}>${String.fromCharCode(97 + i).repeat(1_000_000)}</${i}>\n`,
    );
    const complete = new Set(payloads);
    const polling = pollForTornReads(target, complete, 4);
    await Promise.all(
      payloads.map(async (payload) => {
        for (let round = 0; round < 6; round += 1) await writeFileAtomic(target, payload);
      }),
    );
    const { reads, torn } = await polling.stop();
    expect(reads).toBeGreaterThan(0);
    expect(torn).toBe(0);
    expect(complete.has(readFileSync(target, "utf8"))).toBe(true);
    expect(readdirSync(dir)).toEqual(["junit.xml"]);
  }, 30_000);

  test("on error the temp file is removed and the error is rethrown", async () => {
    const dir = tempDir();
    // Renaming a file over a non-empty directory fails after the temp file was written.
    const target = join(dir, "occupied");
    mkdirSync(join(target, "child"), { recursive: true });
    let caught: unknown;
    try {
      await writeFileAtomic(target, "data");
    } catch (error) {
      caught = error;
    }
    expect((caught as NodeJS.ErrnoException | undefined)?.code).toMatch(/^(EISDIR|ENOTEMPTY|EEXIST|EPERM)$/);
    expect(readdirSync(dir)).toEqual(["occupied"]);
    expect(readdirSync(target)).toEqual(["child"]);
  });
});
