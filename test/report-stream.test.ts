/**
 * Streamed reports (report/atomic-stream.ts and the *Chunks renderers):
 * the files are what the writers produced before they streamed, byte for
 * byte, they land atomically, and a failure half way leaves the previous
 * reports as they were.
 *
 * The golden files under test/fixtures/report-golden/ and the digests below
 * were produced by the report writer as it was before streaming (the whole
 * report parsed, each document rendered as one string), on the same
 * fixtures (helpers/varied-report.ts), through ReportWriter with a redactor.
 * report.json and its digests are of report schema version 2: they differ
 * from version 1's only in `schemaVersion`, `failure.type` (a kind) and
 * `errorName` (the error's name, formerly in `type`).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { pollForTornReads } from "./helpers/torn-reads.ts";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ZodError } from "zod";
import { ReportWriter } from "../runner/engine/report-writer.ts";
import { FLUSH_BYTES, writeChunksAtomic, writeDocumentsAtomic } from "../runner/report/atomic-stream.ts";
import { renderCtrf } from "../runner/report/ctrf.ts";
import { renderJson } from "../runner/report/json.ts";
import { jsonItems, nestedJson } from "../runner/report/json-stream.ts";
import { renderJUnit } from "../runner/report/junit.ts";
import {
  PLAIN_TEST_KEYS,
  TestResultSchema,
  validTest,
  type RunReport,
  type TestResult,
} from "../runner/results/report-model.ts";
import { sharedTestChecks } from "../runner/results/shared-checks.ts";
import { makeRedactor, redactReport } from "../runner/results/redact.ts";
import { variedReport, VARIED_SECRET } from "./helpers/varied-report.ts";
import { validateJUnitXml } from "./helpers/xsd.ts";
import { removeSuites, tempDir as makeTempDir } from "./helpers/cli.ts";

const FORMATS = ["junit.xml", "report.json", "ctrf.json"] as const;
const GOLDEN = join(import.meta.dir, "fixtures", "report-golden");

/** SHA-256 of what the non-streamed writers produced for variedReport(20_000). */
const DIGESTS_20K = {
  writer: {
    "junit.xml": "80266e001bd252d78875c24eab184258a7764ae66d40e6a6c2fa86b929cd9565",
    "report.json": "2d553df6dbbb1743be849bf9de762b614d1eba6a9f8651ee1d737535aa7c7a20",
    "ctrf.json": "f54bf6a12224ad393c81687e1c037888c9a6fbab54f5fa98df73dc991da4d998",
  },
  // renderJUnit / renderJson / renderCtrf, without redaction.
  pure: {
    "junit.xml": "e95ae1ca265531132946f6b58086449f844648d1ab10bde48953cac61152a8bf",
    "report.json": "93ba44ff8e049ba6e0e993f8c26eeeb6ab71851e1edafbe306e7636bf66b9d34",
    "ctrf.json": "7f51e89a7443bdc0da1d427b80531f0dede5f935f13bbcdee1c772d89e8bada3",
  },
};

afterAll(removeSuites);
const tempDir = () => makeTempDir("sg-report-stream-");

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** A ReportWriter into `dir` (stable paths) and `dir/run` (the run's copies), redacting the fixture's secret. */
function writerIn(dir: string, errors: string[] = []): ReportWriter {
  return new ReportWriter(
    {
      junit: join(dir, "junit.xml"),
      json: join(dir, "report.json"),
      ctrf: join(dir, "ctrf.json"),
      runDir: () => join(dir, "run"),
    },
    makeRedactor({ [VARIED_SECRET.name]: VARIED_SECRET.value }),
    (message) => errors.push(message),
  );
}

describe("streamed reports are the non-streamed reports, byte for byte", () => {
  test(
    "a varied report of 200 tests: the golden files; the " + "run's copies are the same; secrets redacted; JUnit valid",
    async () => {
      const dir = tempDir();
      const errors: string[] = [];
      await writerIn(dir, errors).write(true, () => variedReport(200));
      expect(errors).toEqual([]);
      for (const name of FORMATS) {
        const written = readFileSync(join(dir, name), "utf8");
        expect(written).toBe(readFileSync(join(GOLDEN, name), "utf8"));
        expect(readFileSync(join(dir, "run", name), "utf8")).toBe(written);
        expect(written).not.toContain(VARIED_SECRET.value);
      }
      const xsd = await validateJUnitXml(readFileSync(join(dir, "junit.xml"), "utf8"));
      expect(xsd.errors).toEqual([]);
      expect(xsd.valid).toBe(true);
      expect(readdirSync(dir).sort()).toEqual(["ctrf.json", "junit.xml", "report.json", "run"]);
    },
  );

  test("a varied report of 20,000 tests: the same digests through the writer and the string renderers", async () => {
    const dir = tempDir();
    await writerIn(dir).write(true, () => variedReport(20_000));
    for (const name of FORMATS)
      expect(`${name} ${sha256(readFileSync(join(dir, name)))}`).toBe(`${name} ${DIGESTS_20K.writer[name]}`);
    const report = variedReport(20_000);
    expect(sha256(renderJUnit(report))).toBe(DIGESTS_20K.pure["junit.xml"]);
    expect(sha256(renderJson(report))).toBe(DIGESTS_20K.pure["report.json"]);
    expect(sha256(renderCtrf(report))).toBe(DIGESTS_20K.pure["ctrf.json"]);
  }, 30_000);

  test("nestedJson is JSON.stringify of the value nested that deep", () => {
    const value = { a: [1, { b: "x\ny" }], c: {}, d: [], e: null, u: undefined, s: "\u0000 \u2028" };
    for (const depth of [0, 1, 3, 7]) {
      let wrapped: unknown = value;
      let before = "";
      let after = "";
      for (let i = 0; i < depth; i++) {
        wrapped = { k: wrapped };
        before = `{\n${"  ".repeat(depth - i)}"k": ${before}`;
        after += `\n${"  ".repeat(depth - 1 - i)}}`;
      }
      expect(before + nestedJson(value, depth) + after).toBe(JSON.stringify(wrapped, null, 2));
    }
  });
});

describe("per-entry shortcuts are what they stand for", () => {
  test("jsonItems is nestedJson of each item, joined as JSON.stringify joins array items at that depth", () => {
    const report = variedReport(300);
    const items: unknown[] = [
      ...report.shards.flatMap((shard) => shard.tests),
      { a: [1, { b: "x\ny" }], c: {}, d: [], e: null, u: undefined },
      "s",
      0,
      [],
      [[]],
    ];
    for (const depth of [1, 2, 3, 4, 7]) {
      const separator = `,\n${"  ".repeat(depth)}`;
      for (const n of [1, 2, 17, items.length]) {
        const some = items.slice(items.length - n);
        expect(jsonItems(some, depth)).toBe(some.map((item) => nestedJson(item, depth)).join(separator));
      }
    }
  });

  test("validTest's hand-made copy of plain entries is zod's copy, and anything zod rejects still fails", () => {
    // The shortcut reads and writes the schema's fields: a field added to the schema must be added there.
    expect<string[]>([...PLAIN_TEST_KEYS]).toEqual(Object.keys(TestResultSchema.shape));
    const plain: TestResult = {
      name: "n",
      file: "f",
      status: "passed",
      durationMs: 1.5,
      retries: 0,
      flaky: false,
      attemptFailures: [],
      synthetic: false,
    };
    const variants: unknown[] = [
      ...variedReport(400).shards.flatMap((shard) => shard.tests),
      plain,
      { name: "n", file: "f", status: "todo", durationMs: 0 },
      { ...plain, line: 0, extra: "dropped", retries: 2 ** 53 - 1, flaky: true, synthetic: true },
      { ...plain, line: -0, durationMs: -0 },
      {
        ...plain,
        line: undefined,
        failure: undefined,
        retries: undefined,
        flaky: undefined,
        attemptFailures: undefined,
        synthetic: undefined,
      },
      ...[Infinity, NaN, -1, "1", null].map((durationMs) => ({ ...plain, durationMs })),
      ...[1.5, -1, 2 ** 53, "3", null].map((line) => ({ ...plain, line })),
      ...[1.5, -1, 2 ** 53, "3", null].map((retries) => ({ ...plain, retries })),
      ...["exploded", undefined, 3].map((status) => ({ ...plain, status })),
      ...[0, "no", null].map((flaky) => ({ ...plain, flaky, synthetic: flaky })),
      ...[[{ type: "failure", errorName: "E", message: "m" }], [{ type: 1 }], {}, null].map((attemptFailures) => ({
        ...plain,
        attemptFailures,
      })),
      { ...plain, failure: { type: "failure", errorName: "E", message: "m", unknown: 1 } },
      { ...plain, status: "never-started", synthetic: true, failure: { type: "never-started", message: "queued" } },
      { ...plain, failure: { type: "failure", errorName: "E", message: "m", details: "d" } },
      { ...plain, failure: { type: "E", message: "m" } },
      { ...plain, failure: { type: "failure", message: "m" } },
      { ...plain, failure: { type: "failure", errorName: 5, message: "m" } },
      { ...plain, failure: { type: "failure", errorName: undefined, message: "m" } },
      { ...plain, failure: { message: "m", details: undefined, type: "failure", errorName: "E" } },
      { ...plain, failure: { type: "failure", errorName: "E", message: "m", details: 3 } },
      { ...plain, failure: { type: "failure", errorName: "E", message: 5 } },
      { ...plain, failure: { type: "failure", errorName: "E" } },
      { ...plain, failure: Object.assign(Object.create(null), { type: "failure", errorName: "E", message: "m" }) },
      { ...plain, failure: Object.assign([], { type: "failure", errorName: "E", message: "m" }) },
      { ...plain, failure: "E" },
      { ...plain, failure: null },
      { ...plain, name: 5 },
      { ...plain, file: undefined },
      Object.assign(Object.create(null), plain),
      Object.assign(new Date(0), plain),
      Object.assign([], plain),
      null,
      "entry",
    ];
    let accepted = 0;
    for (const [i, value] of variants.entries()) {
      const zod = TestResultSchema.safeParse(value);
      let ours: TestResult | undefined;
      let error: unknown;
      try {
        ours = validTest(value as TestResult, 0, i);
      } catch (caught) {
        error = caught;
      }
      if (!zod.success) {
        expect(error).toBeInstanceOf(ZodError);
        continue;
      }
      accepted += 1;
      expect(ours).toEqual(zod.data);
      expect(Object.keys(ours!)).toEqual(Object.keys(zod.data));
      expect(JSON.stringify(ours)).toBe(JSON.stringify(zod.data));
    }
    expect(accepted).toBeGreaterThan(400);
  });

  test(
    "sharedTestChecks: readers in step get validTest's copy, checked once; a reader out of step checks on its " +
      "own; a bad entry throws where validTest does",
    () => {
      const report = variedReport(200);
      const tests = report.shards.flatMap((shard, s) => shard.tests.map((test, t) => ({ test, s, t })));
      const [a, b] = sharedTestChecks(2);
      for (const { test, s, t } of tests) {
        const first = a!(test, s, t);
        expect(first).toEqual(validTest(test, s, t));
        expect(b!(test, s, t)).toBe(first);
      }
      // Out of step: b asks for other entries than a checked at those positions.
      const [c, d] = sharedTestChecks(2);
      c!(tests[0]!.test, 0, 0);
      c!(tests[1]!.test, 0, 1);
      expect(d!(tests[1]!.test, 0, 1)).toEqual(validTest(tests[1]!.test, 0, 1));
      expect(d!(tests[1]!.test, 0, 1)).not.toBe(c!(tests[2]!.test, 0, 2));
      const bad = { ...tests[5]!.test, durationMs: -1 };
      const [e] = sharedTestChecks(1);
      let caught: unknown;
      try {
        e!(bad, 1, 7);
      } catch (error) {
        caught = error;
      }
      expect((caught as ZodError).issues.map((i) => i.path)).toEqual([["shards", 1, "tests", 7, "durationMs"]]);
    },
  );
});

describe("a failure half way leaves the previous reports intact", () => {
  test("a test entry that fails the schema in the middle of " +
    "20,000: no report changes, no temp file, the error is told", async () => {
    const dir = tempDir();
    const errors: string[] = [];
    const writer = writerIn(dir, errors);
    await writer.write(false, () => variedReport(200));
    const before = Object.fromEntries(FORMATS.map((name) => [name, readFileSync(join(dir, name))]));
    const broken = variedReport(20_000);
    const tests = broken.shards[2]!.tests;
    tests[tests.length >> 1] = { ...tests[tests.length >> 1]!, status: "exploded" as TestResult["status"] };
    await writer.write(true, () => broken);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("could not write the reports");
    for (const name of FORMATS) {
      expect(readFileSync(join(dir, name)).equals(before[name]!)).toBe(true);
      expect(readFileSync(join(dir, "run", name)).equals(before[name]!)).toBe(true);
    }
    expect(readdirSync(dir).sort()).toEqual(["ctrf.json", "junit.xml", "report.json", "run"]);
    expect(readdirSync(join(dir, "run")).sort()).toEqual([...FORMATS].sort());
  }, 30_000);

  test("the schema error names the bad entry's place in the report", () => {
    const report = variedReport(200);
    report.shards[1]!.tests[7] = { ...report.shards[1]!.tests[7]!, durationMs: -1 };
    let caught: unknown;
    try {
      renderJson(report);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ZodError);
    expect((caught as ZodError).issues.map((i) => i.path)).toEqual([["shards", 1, "tests", 7, "durationMs"]]);
    expect(() => renderCtrf(report)).toThrow(ZodError);
    expect(() => renderJson({ ...report, runId: 5 } as unknown as RunReport)).toThrow(ZodError);
    expect(() =>
      renderJson({ ...report, shards: [{ ...report.shards[0]!, tests: undefined }] } as unknown as RunReport),
    ).toThrow(ZodError);
  });

  test(
    "writeChunksAtomic: chunks that throw after several " + "flushes leave every target as it was and no temp file",
    async () => {
      const dir = tempDir();
      const targets = [join(dir, "run", "a.txt"), join(dir, "a.txt")];
      mkdirSync(join(dir, "run"));
      for (const target of targets) writeFileSync(target, "previous\n");
      function* chunks(): Generator<string> {
        for (let i = 0; i < 5; i++) yield "x".repeat(FLUSH_BYTES);
        throw new Error("render failed half way");
      }
      await expect(writeChunksAtomic(targets, chunks())).rejects.toThrow("render failed half way");
      for (const target of targets) expect(readFileSync(target, "utf8")).toBe("previous\n");
      expect(readdirSync(dir).sort()).toEqual(["a.txt", "run"]);
      expect(readdirSync(join(dir, "run"))).toEqual(["a.txt"]);
    },
  );
  test(
    "writeDocumentsAtomic: one document that throws after the others are complete leaves every document's " +
      "targets as they were",
    async () => {
      const dir = tempDir();
      const names = ["a.json", "b.xml", "c.json"];
      for (const name of names) writeFileSync(join(dir, name), "previous\n");
      // Rendered side by side: "c" fails only once "a" and "b" have yielded everything.
      function* failsLate(): Generator<string> {
        for (let i = 0; i < 8; i++) yield "z".repeat(FLUSH_BYTES / 2);
        throw new Error("schema check failed late");
      }
      const documents = [
        { targets: [join(dir, "run", "a.json"), join(dir, "a.json")], chunks: ["x".repeat(FLUSH_BYTES), "y"] },
        { targets: [join(dir, "b.xml")], chunks: ["<b/>\n"] },
        { targets: [join(dir, "run", "c.json"), join(dir, "c.json")], chunks: failsLate() },
      ];
      await expect(writeDocumentsAtomic(documents)).rejects.toThrow("schema check failed late");
      for (const name of names) expect(readFileSync(join(dir, name), "utf8")).toBe("previous\n");
      expect(readdirSync(dir).sort()).toEqual([...names, "run"].sort());
      expect(readdirSync(join(dir, "run"))).toEqual([]);
      // And when nothing throws, every document lands whole.
      await writeDocumentsAtomic(documents.slice(0, 2));
      expect(readFileSync(join(dir, "a.json"), "utf8")).toBe(`${"x".repeat(FLUSH_BYTES)}y`);
      expect(readFileSync(join(dir, "run", "a.json"), "utf8")).toBe(`${"x".repeat(FLUSH_BYTES)}y`);
      expect(readFileSync(join(dir, "b.xml"), "utf8")).toBe("<b/>\n");
    },
  );
});

describe("writeChunksAtomic", () => {
  test("every target gets the whole text (UTF-8, across flushes); parents are created; the mode applies", async () => {
    const dir = tempDir();
    const targets = [join(dir, "x", "run", "r.json"), join(dir, "y", "r.json")];
    // Small, larger than the first buffer, larger than any buffer, then filling buffers in turn.
    const pieces = [
      "h\u00e9llo \u{1F600}\n",
      "b".repeat(40_000),
      "a".repeat(FLUSH_BYTES - 3),
      "\u{1F600}".repeat(1000),
      ...Array.from({ length: 30 }, (_, i) => `${i}`.repeat(50_000)),
      "end\n",
    ];
    await writeChunksAtomic(targets, pieces, 0o600);
    for (const target of targets) {
      expect(readFileSync(target, "utf8")).toBe(pieces.join(""));
      expect((await Bun.file(target).stat()).mode & 0o777).toBe(0o600);
    }
    await writeChunksAtomic(targets, []);
    for (const target of targets) expect(readFileSync(target, "utf8")).toBe("");
    expect(readdirSync(join(dir, "y"))).toEqual(["r.json"]);
  });

  test("readers polling during streamed rewrites only ever see a complete version", async () => {
    const dir = tempDir();
    const target = join(dir, "junit.xml");
    const versions = Array.from({ length: 6 }, (_, v) =>
      Array.from({ length: 8 }, (_, i) => `<${v}.${i}>${String.fromCharCode(97 + v).repeat(FLUSH_BYTES / 2)}\n`),
    );
    const complete = new Set(versions.map((pieces) => pieces.join("")));
    const polling = pollForTornReads(target, complete, 3);
    for (let round = 0; round < 3; round++) for (const pieces of versions) await writeChunksAtomic([target], pieces);
    const { reads, torn } = await polling.stop();
    expect(reads).toBeGreaterThan(0);
    expect(torn).toBe(0);
    expect(readdirSync(dir)).toEqual(["junit.xml"]);
  }, 30_000);
});

describe("redactReport copies only what it changes", () => {
  test(
    "entries without a secret are the input's own objects; " + "entries with one are copies; the input is untouched",
    () => {
      const report = variedReport(200);
      const redact = makeRedactor({ [VARIED_SECRET.name]: VARIED_SECRET.value });
      const safe = redactReport(report, redact);
      let same = 0;
      let copied = 0;
      for (const [s, shard] of report.shards.entries()) {
        for (const [t, test] of shard.tests.entries()) {
          const out = safe.shards[s]!.tests[t]!;
          if (JSON.stringify(test).includes(VARIED_SECRET.value)) {
            expect(out).not.toBe(test);
            expect(JSON.stringify(out)).not.toContain(VARIED_SECRET.value);
            copied += 1;
          } else {
            expect(out).toBe(test);
            same += 1;
          }
        }
      }
      expect(copied).toBeGreaterThan(0);
      expect(same).toBeGreaterThan(copied);
      expect(JSON.stringify(report)).toContain(VARIED_SECRET.value);
      // A shard without any secret is handed back as it is.
      expect(safe.shards[3]).toBe(report.shards[3]!);
    },
  );
});
