/**
 * Failure text is capped everywhere it enters or leaves the runner (docs/reports.md
 * §5): inspector messages and Bun's JUnit are cut on the way in, and every
 * report keeps at most 64 KiB of the tail and names the shard's log.
 * Memory itself is measured by bench/failure-rss.ts, not here.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readBunJUnit } from "../runner/results/bun-junit.ts";
import {
  JUNIT_BYTES_PER_FAILED_TEST,
  JUNIT_BYTES_PER_STARTED_TEST,
  junitByteLimit,
  JUnitShrinker,
  JUnitTooLargeError,
  MAX_JUNIT_BYTES,
  MAX_JUNIT_BYTES_CEILING,
  hasNothingToCut,
  NotARegularFileError,
} from "../runner/results/junit-shrink.ts";
import { readJUnitCapped, WHOLE_READ_BYTES } from "../runner/results/junit-read.ts";
import { capJsonStrings, capText, cutMarker, INGEST_NOTE, MAX_TEXT_BYTES } from "../runner/util/text-cap.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";

const KiB = 1024;

/** A random whole number below `n` from xorshift32: a fixed seed, so a failure repeats. */
function seededRandom(seed: number): (n: number) => number {
  return (n) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
}

describe("capJsonStrings: long JSON strings cut without parsing", () => {
  test("short documents pass unchanged; a long string keeps its tail behind the marker", () => {
    const small = JSON.stringify({ a: "b" });
    expect(capJsonStrings(Buffer.from(small), 100)).toBe(small);
    const doc = { method: "LifecycleReporter.error", params: { message: `${"x".repeat(5000)}TAIL`, urls: ["/a.ts"] } };
    const out = JSON.parse(capJsonStrings(Buffer.from(JSON.stringify(doc)), 100));
    expect(out.method).toBe("LifecycleReporter.error");
    expect(out.params.urls).toEqual(["/a.ts"]);
    expect(out.params.message.startsWith("[shardguard: first 4904 bytes cut; full text in the shard log]\n")).toBe(
      true,
    );
    expect(out.params.message.endsWith("xTAIL")).toBe(true);
  });

  test("no cut splits an escape sequence or a code point: the result always parses", () => {
    const pieces = ["\\", '"', "\n", "é", "😀", "\u0001", "a"];
    for (let seed = 0; seed < 200; seed++) {
      let text = "";
      for (let i = 0; i < 300; i++) text += pieces[(seed * 7 + i * ((seed % 5) + 1)) % pieces.length];
      const json = JSON.stringify({ message: text, other: "kept" });
      for (const cap of [10, 37, 64, 101]) {
        const parsed = JSON.parse(capJsonStrings(Buffer.from(json), cap));
        expect(parsed.other).toBe("kept");
        expect(typeof parsed.message).toBe("string");
      }
    }
  });
});

describe("JUnitShrinker: Bun's JUnit read with long texts cut", () => {
  const junit = (message: string, body: string) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bun test">\n  <testsuite name="a.test.ts" ` +
    `file="a.test.ts">\n` +
    (`    <testcase name="big" time="0.1" file="a.test.ts" line="2">\n      <failure type="Error" ` +
      `message="${message}">${body}</failure>\n`) +
    `    </testcase>\n  </testsuite>\n</testsuites>\n`;

  const shrink = (text: string, cap: number, chunk = 7) => {
    const shrinker = new JUnitShrinker(cap);
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += chunk) shrinker.push(bytes.subarray(i, i + chunk));
    return shrinker.end();
  };

  test("attribute and text keep their tails, entities stay whole, the rest is unchanged", () => {
    const long = `${"y&amp;".repeat(2000)}&#10;END`;
    const text = shrink(junit(long, long), 500);
    const [file] = readBunJUnit(text);
    const failure = file!.tests[0]!.failure!;
    expect(file!.tests[0]!.name).toBe("big");
    expect([failure.type, failure.errorName]).toEqual(["failure", "Error"]);
    expect(failure.message).toMatch(/^\[shardguard: first \d+ bytes cut; full text in the shard log\]\n/);
    expect(failure.message.endsWith("y&\nEND")).toBe(true);
    expect(failure.details!.endsWith("y&\nEND")).toBe(true);
    expect(Buffer.byteLength(failure.details!)).toBeLessThan(600);
  });

  test("the same bytes whatever the chunking; small documents untouched", () => {
    const doc = junit("short", "short body");
    expect(shrink(doc, 500, 1)).toBe(doc);
    const long = junit("m".repeat(3000), "b".repeat(3000));
    expect(shrink(long, 500, 1)).toBe(shrink(long, 500, 4096));
  });

  test(
    "many testcases with long and short texts: the same " + "bytes whatever the chunking, also from one reused buffer",
    () => {
      const cases = Array.from({ length: 60 }, (_, i) => {
        const message = i % 3 === 0 ? `m${i}&amp;`.repeat(200 + i) : `short ${i} 'q'`;
        const body = i % 4 === 0 ? `b${i}&#10;`.repeat(150 + i) : i % 4 === 1 ? "" : `line ${i}`;
        return (
          `    <testcase name='t${i}' time="0.${i}">\n      <failure type="E" ` +
          `message="${message}">${body}</failure>\n    </testcase>\n`
        );
      });
      const doc =
        `<?xml version="1.0"?>\n<testsuites>\n  <testsuite name="a.test.ts">\n${cases.join("")}  ` +
        `</testsuite>\n</testsuites>\n`;
      const whole = shrink(doc, 400, doc.length);
      expect(whole.length).toBeLessThan(doc.length);
      for (const chunk of [1, 3, 13, 400, 4096]) expect(shrink(doc, 400, chunk)).toBe(whole);
      // As readJUnitCapped feeds it: one buffer, refilled between pushes.
      const shrinker = new JUnitShrinker(400);
      const bytes = Buffer.from(doc);
      const reused = Buffer.alloc(37);
      for (let i = 0; i < bytes.length; i += reused.length) {
        const n = bytes.copy(reused, 0, i, i + reused.length);
        shrinker.push(reused.subarray(0, n));
        reused.fill(0x3c);
      }
      expect(shrinker.end()).toBe(whole);
      expect(readBunJUnit(whole)[0]!.tests).toHaveLength(60);
    },
  );

  test("a tag longer than the cap, or a document too large after cuts, is refused", () => {
    expect(() => shrink(`<testsuites ${"a".repeat(2000)}="1"/>`, 500)).toThrow(JUnitTooLargeError);
    const many = new JUnitShrinker(500, 10_000);
    expect(() => many.push(Buffer.from(`<testsuites>${"<testcase name='t'/>".repeat(1000)}</testsuites>`))).toThrow(
      JUnitTooLargeError,
    );
  });

  test("readJUnitCapped refuses a FIFO or a directory at once instead of waiting for a writer", async () => {
    const dir = makeSuite({});
    const fifo = path.join(dir, "fifo.xml");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    // Before, the read waited for a writer forever (the test's time limit ends such a wait).
    await expect(readJUnitCapped(fifo)).rejects.toThrow(NotARegularFileError);
    await expect(readJUnitCapped(dir)).rejects.toThrow(NotARegularFileError);
  });

  test("readJUnitCapped streams a file and reports a missing one by its code", async () => {
    const dir = makeSuite({});
    const file = path.join(dir, "bun.xml");
    writeFileSync(file, junit("m".repeat(200 * KiB), "short"));
    const [entry] = readBunJUnit(await readJUnitCapped(file));
    expect(Buffer.byteLength(entry!.tests[0]!.failure!.message)).toBeLessThanOrEqual(MAX_TEXT_BYTES + 100);
    const missing = await readJUnitCapped(path.join(dir, "none.xml")).catch((e: NodeJS.ErrnoException) => e.code);
    expect(missing).toBe("ENOENT");
  });

  test("readJUnitCapped: a file read in one piece (up to 32 MiB) and one streamed give the same cut text", async () => {
    const dir = makeSuite({});
    const small = path.join(dir, "small.xml");
    const large = path.join(dir, "large.xml");
    // The same failure message cut to its tail; the larger file only has a longer head to cut.
    writeFileSync(small, junit(`${"m".repeat(250 * KiB - 400)}TAIL`, "short"));
    writeFileSync(large, junit(`${"m".repeat(WHOLE_READ_BYTES)}TAIL`, "short"));
    expect(Bun.file(large).size).toBeGreaterThan(WHOLE_READ_BYTES);
    const fromSmall = await readJUnitCapped(small);
    const shrinker = new JUnitShrinker(MAX_TEXT_BYTES);
    const bytes = readFileSync(small);
    for (let i = 0; i < bytes.length; i += 4096) shrinker.push(bytes.subarray(i, i + 4096));
    expect(fromSmall).toBe(shrinker.end());
    const [a] = readBunJUnit(fromSmall);
    const [b] = readBunJUnit(await readJUnitCapped(large));
    expect(a!.tests[0]!.failure!.message.endsWith("TAIL")).toBe(true);
    expect(b!.tests[0]!.failure!.message.slice(-1000)).toBe(a!.tests[0]!.failure!.message.slice(-1000));
  });

  test(
    "hasNothingToCut: on generated documents the cutter's " + "text is the document itself, or the reader refuses both",
    () => {
      // Pieces around a cut length of 200 bytes: short and long text, values
      // with and without "<", entities, multi-byte characters, comments,
      // CDATA, processing instructions, tags with many attributes.
      const cap = 200;
      const random = seededRandom(2463534242);
      const run = (length: number, alphabet: string[]) =>
        Array.from({ length }, () => alphabet[random(alphabet.length)]).join("");
      const plain = ["a", "b", " ", "&amp;", "\u00e9", "\u{1F600}", "\n", ">"];
      const lengthOf = () => (random(3) === 0 ? random(150) : random(20));
      // Well-formed pieces (and one in ten with a "<" in a value, which is not).
      const piece = (depth: number): string => {
        switch (random(10)) {
          case 0:
            return `<testcase name="${run(lengthOf(), [...plain, "<"])}" line="1"/>`;
          case 1:
            return run(lengthOf(), plain);
          case 2:
            return (
              `<testcase name="t"><failure ` +
              `message='${run(lengthOf(), plain)}'>${run(lengthOf(), plain)}</failure></testcase>`
            );
          case 3:
            return `<!--${run(lengthOf(), [...plain, '"', "<"])}-->`;
          case 4:
            return `<![CDATA[${run(lengthOf(), [...plain, '"', "<"])}]]>`;
          case 5:
            return `<?pi ${run(lengthOf(), [...plain, '"', "<"])}?>`;
          case 6:
            return `<testcase ${Array.from({ length: random(30) }, (_, i) => `a${i}="1"`).join(" ")} line="2"/>`;
          case 7:
            return depth < 3
              ? `<testsuite ` +
                  `name="s${depth}">${Array.from({ length: random(4) }, () => piece(depth + 1)).join("")}</testsuite>`
              : "";
          default:
            return `<testcase name="${run(lengthOf(), plain)}" time="0.1" line="3"/>`;
        }
      };
      let taken = 0;
      let refused = 0;
      for (let d = 0; d < 20000; d++) {
        const body = Array.from({ length: 1 + random(12) }, () => piece(0)).join("");
        const doc =
          `${random(4) === 0 ? "" : '<?xml version="1.0"?>\n'}<testsuites><testsuite ` +
          `name="a.test.ts">${body}</testsuite></testsuites>`;
        const bytes = Buffer.from(doc);
        if (!hasNothingToCut(bytes, cap)) continue;
        taken += 1;
        let cut: string | null;
        try {
          cut = shrink(doc, cap, 16);
        } catch {
          cut = null;
        }
        if (cut === doc) continue;
        // The cutter changed or refused it: the reader must refuse the document as it is too.
        refused += 1;
        expect(() => readBunJUnit(doc)).toThrow();
      }
      // The generator reaches both sides of the check.
      expect(taken).toBeGreaterThan(1000);
      expect(taken).toBeLessThan(20000);
      expect(refused).toBeGreaterThan(30);
    },
  );

  test(
    "quotes inside the XML declaration, a comment, a CDATA section or a processing instruction are only " +
      "characters to the cutter",
    () => {
      // Read as an attribute's, such a quote put every later quote out of step: a run of tags
      // became one long "value", was cut, and a failing testcase vanished from a document that
      // still parsed.
      const filler = "<z/>".repeat(200);
      const doc =
        `<?xml version="?><testsuites><!-- it's "quoted" --><testsuite name='a.test.ts' file='a.test.ts'>` +
        `<![CDATA[ a"b <c d='e ]]]><?pi say "hi?>` +
        `<testcase name='t' line='1'><failure message='boom'>boom</failure></testcase>${filler}"` +
        `<!--- dashes --->` +
        `<testcase name='u' line='9'/></testsuite></testsuites>`;
      for (const chunk of [1, 2, 3, 7, 64, doc.length]) expect(shrink(doc, 500, chunk)).toBe(doc);
      expect(readBunJUnit(shrink(doc, 500, 7))[0]!.tests.map((t) => [t.name, t.status])).toEqual([
        ["t", "failed"],
        ["u", "passed"],
      ]);
      // Each is measured as a tag: longer than the cut length, it is refused, never cut.
      for (const long of [`<!--${"x".repeat(600)}-->`, `<![CDATA[${"x".repeat(600)}]]>`, `<?pi ${"x".repeat(600)}?>`]) {
        expect(() => shrink(`<testsuites>${long}</testsuites>`, 500, 64)).toThrow(JUnitTooLargeError);
      }
    },
  );

  test(
    "the cutter leaves every generated document whose texts and values are short unchanged, whatever its " +
      "comments, CDATA and processing instructions hold, in any chunking",
    () => {
      const random = seededRandom(88172645);
      const alphabet = ["a", " ", "&amp;", "\u00e9", "\u{1F600}", "\n", ">", '"', "'", "<", "-", "]", "?"];
      const run = (length: number) => Array.from({ length }, () => alphabet[random(alphabet.length)]).join("");
      // A body whose text never holds its own end marker.
      const safe = (text: string, end: string) => text.split(end).join("");
      const pieces = [
        () => `<!--${safe(run(random(40)), "--")}-->`,
        () => `<![CDATA[${safe(run(random(40)), "]]>")}]]>`,
        () => `<?pi ${safe(run(random(40)), "?>")}?>`,
        () =>
          `<testcase name="${safe(safe(run(random(20)), '"'), "<")}" line='2'>${safe(run(random(20)), "<")}</testcase>`,
        () => "<z/>",
      ];
      for (let d = 0; d < 2000; d++) {
        const doc =
          `<?xml ` +
          `${safe(run(random(10)), "?>")}?><testsuites>` +
          `${Array.from({ length: 1 + random(8) }, () => pieces[random(pieces.length)]!()).join("")}</testsuites>`;
        for (const chunk of [1, 5, 4096]) expect(shrink(doc, 500, chunk)).toBe(doc);
      }
    },
  );

  test(
    "hasNothingToCut: Bun's own output passes; a long text, " + "a comment or a late processing instruction does not",
    () => {
      const doc = junit("short", "short body");
      expect(hasNothingToCut(Buffer.from(doc))).toBe(true);
      expect(hasNothingToCut(Buffer.from(junit("m".repeat(MAX_TEXT_BYTES), "short")))).toBe(false);
      expect(hasNothingToCut(Buffer.from(junit("short", "b".repeat(MAX_TEXT_BYTES))))).toBe(false);
      expect(hasNothingToCut(Buffer.from(doc.replace("<testsuites", "<!-- c --><testsuites")))).toBe(false);
      expect(hasNothingToCut(Buffer.from(doc.replace("<testsuites", "<?pi x?><testsuites")))).toBe(false);
      expect(hasNothingToCut(Buffer.from(doc.replace('encoding="UTF-8"?>', 'encoding="UTF-8"<x/>')))).toBe(false);
    },
  );

  test("the limit grows with the tests started: a passing file of 100,000 long-named tests (about 19 MB, as Bun " +
    "writes it) is read, not refused", async () => {
    expect(junitByteLimit(0)).toBe(MAX_JUNIT_BYTES);
    expect(junitByteLimit(100_000)).toBe(MAX_JUNIT_BYTES + 100_000 * JUNIT_BYTES_PER_STARTED_TEST);
    expect(junitByteLimit(10_000_000)).toBe(MAX_JUNIT_BYTES_CEILING);
    expect(junitByteLimit(3_000, 1_000)).toBe(
      MAX_JUNIT_BYTES + 3_000 * JUNIT_BYTES_PER_STARTED_TEST + 1_000 * JUNIT_BYTES_PER_FAILED_TEST,
    );
    expect(junitByteLimit(3_000, 1_000_000)).toBe(MAX_JUNIT_BYTES_CEILING);
    const dir = makeSuite({});
    const file = path.join(dir, "bun.xml");
    const suites: string[] = [];
    for (let d = 0; d < 100; d++) {
      const name = `suite ${d} of the agent evaluation matrix`;
      const cases = Array.from(
        { length: 1000 },
        (_, i) =>
          `<testcase name="case ${i} returns the expected answer for the prompt" classname="${name}" ` +
          `time="0.000001" file="big.test.ts" line="${i + 3}" assertions="0" />`,
      );
      suites.push(
        `<testsuite name="${name}" file="big.test.ts" line="2" tests="1000" assertions="0" failures="0" ` +
          `skipped="0" time="0.01" hostname="h">\n${cases.join("\n")}\n</testsuite>`,
      );
    }
    writeFileSync(
      file,
      `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bun test" tests="100000" assertions="0" ` +
        `failures="0" skipped="0" time="1"><testsuite name="big.test.ts" file="big.test.ts" tests="100000" ` +
        `assertions="0" failures="0" skipped="0" time="1" ` +
        `hostname="h">\n${suites.join("\n")}\n</testsuite></testsuites>\n`,
    );
    expect(Bun.file(file).size).toBeGreaterThan(MAX_JUNIT_BYTES);
    await expect(readJUnitCapped(file)).rejects.toThrow(JUnitTooLargeError);
    const entries = readBunJUnit(await readJUnitCapped(file, junitByteLimit(100_000)));
    expect(entries.flatMap((e) => e.tests)).toHaveLength(100_000);
  }, 30_000);
});

test("1,000 of 3,000 tests failing with 12 KB messages (a 24 MB JUnit): the shard is failed, every test with its " +
  "status, not crashed for an unreadable JUnit", async () => {
  const body =
    `import { expect, test } from "bun:test";\n` +
    `const long = "m".repeat(12_000);\n` +
    `for (let i = 0; i < 3000; i++) test("t" + i, () => { if (i % 3 === 0) throw new Error(long + " " + i); ` +
    `expect(i).toBe(i); });\n`;
  const dir = makeSuite({ "many.test.ts": body });
  const r = await runCli(["run", "--root", dir], { limitMs: 60_000 });
  expect(r.code).toBe(1);
  const shard = readReport(dir).shards[0]!;
  expect(shard.reason).not.toContain("unreadable");
  expect([shard.status, shard.testSource]).toEqual(["failed", "junit+events"]);
  expect(shard.tests.filter((t) => t.status === "failed")).toHaveLength(1_000);
  expect(shard.tests.filter((t) => t.status === "passed")).toHaveLength(2_000);
}, 60_000);

describe("capText: a text cut at ingestion is cut again as one in reports", () => {
  test("the report's marker counts every byte cut and names the log", () => {
    const once = `${cutMarker(1_000_000, INGEST_NOTE)}${"z".repeat(200)}`;
    expect(capText(once, 10_000, "full log: x.log")).toBe(
      `${cutMarker(1_000_000, "full log: x.log")}${"z".repeat(200)}`,
    );
    const twice = capText(once, 120, "full log: x.log");
    expect(twice).toMatch(/^\[shardguard: first 10001\d\d bytes cut; full log: x\.log\]\nz+$/);
    expect(Buffer.byteLength(twice)).toBeLessThanOrEqual(120);
  });
});

test("a test failing with a 1 MiB message: every report " +
  "keeps the tail, at most 64 KiB, and names the log", async () => {
  const dir = makeSuite({
    "huge.test.ts":
      `import { test } from "bun:test";\ntest("huge", () => { throw new Error("x".repeat(1024 * ` +
      `1024) + "THE-TAIL"); });\n`,
  });
  for (const events of [[], ["--no-test-events"]]) {
    const run = await runCli(["run", "--root", dir, "--jobs", "1", "--timeout", "60", ...events]);
    expect(run.code).toBe(1);
    const report = readReport(dir);
    const shard = report.shards[0]!;
    expect(shard.status).toBe("failed");
    const note = `full log: ${shard.logPath}`;
    const failure = shard.tests[0]!.failure!;
    for (const text of [failure.message, failure.details!]) {
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(64 * KiB);
      expect(text).toContain(`bytes cut; ${note}]`);
      expect(text).toContain("THE-TAIL");
    }
    const ctrf = JSON.parse(readFileSync(path.join(dir, ".shardguard", "ctrf.json"), "utf8"));
    const entry = ctrf.results.tests[0];
    for (const text of [entry.message, entry.trace]) {
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(64 * KiB);
      expect(text).toContain(`bytes cut; ${note}]`);
      expect(text).toContain("THE-TAIL");
    }
    const xml = readFileSync(path.join(dir, ".shardguard", "junit.xml"), "utf8");
    expect(xml).toContain(`bytes cut; ${note}]`);
    expect(xml.length).toBeLessThan(200 * KiB);
    // The full text is in the log, where the marker points.
    expect(readFileSync(shard.logPath!, "utf8")).toContain(`${"x".repeat(1000)}THE-TAIL`);
  }
}, 60_000);

afterAll(removeSuites);
