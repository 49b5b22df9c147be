/**
 * Bun's JUnit read in pieces (results/junit-read.ts `readJUnitPieces`,
 * results/bun-junit.ts `readBunJUnitFile`): the same entries and the same
 * errors as the whole text read at once, whatever the chunk boundaries.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { BunJUnitParseError, readBunJUnit, readBunJUnitFile } from "../runner/results/bun-junit.ts";
import { cutJUnitText, JUnitShrinker, JUnitTooLargeError } from "../runner/results/junit-shrink.ts";
import { readJUnitCapped, WHOLE_READ_BYTES } from "../runner/results/junit-read.ts";
import { XmlScanner, type XmlHandler } from "../runner/results/xml-scan.ts";
import { removeSuites, tempDir } from "./helpers/cli.ts";

const dir = tempDir("sg-junit-pieces-");
afterAll(removeSuites);

/**
 * A JUnit as Bun writes it: describes of long names, a failure with a long
 * message, a hook, a comment, a multi-byte name.
 */
function document(tests: number, nameLength: number): string {
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bun test" tests="1">\n' +
      '  <testsuite name="a.test.ts" file="a.test.ts" tests="1">\n',
  ];
  const pad = (head: string) => `${head} `.padEnd(nameLength, "ab\u00e9\u4e2d ");
  for (let d = 0; d * 100 < tests; d++) {
    out.push(`    <testsuite name="${pad(`suite ${d}`)}" file="a.test.ts" line="3">\n`);
    for (let i = d * 100; i < Math.min(tests, (d + 1) * 100); i++) {
      const name = pad(`test ${i} &amp; &#10;`);
      if (i % 37 === 5) {
        out.push(
          `      <testcase name="${name}" classname="x" time="0.001" file="a.test.ts" line="${i}" assertions="1">\n`,
        );
        out.push(
          `        <failure type="Error" message="boom ${"m".repeat(i % 3 === 0 ? 70_000 : 10)}">Error: ` +
            `boom &lt;${"x".repeat(300)}</failure>\n      </testcase>\n`,
        );
      } else if (i % 41 === 7)
        out.push(
          `      <!-- a comment > with "quotes' -->\n      <testcase name="${name}" classname="x" time="0.002" ` +
            `file="a.test.ts" line="${i}" assertions="0">\n        <skipped message="TODO" />\n      </testcase>\n`,
        );
      else
        out.push(
          `      <testcase name="${name}" classname="x" time="0.000012" ` +
            `file="a.test.ts" line="${i}" assertions="1" />\n`,
        );
    }
    out.push(
      `      <testcase name="(unnamed)" classname="x" time="0" file="a.test.ts" assertions="0" />\n    </testsuite>\n`,
    );
  }
  out.push("  </testsuite>\n</testsuites>\n");
  return out.join("");
}

/** Every scanner event, as text: open with attributes, close, and text runs joined as the reader joins them. */
class Recorder implements XmlHandler {
  readonly events: string[] = [];
  private pending = "";
  open(name: string, attributes: Record<string, string>, selfClosing: boolean): void {
    this.flush();
    this.events.push(`<${name} ${JSON.stringify(attributes)} ${selfClosing}`);
  }
  close(name: string): void {
    this.flush();
    this.events.push(`</${name}`);
  }
  text(raw: string): void {
    this.pending += raw;
  }
  private flush(): void {
    if (this.pending !== "") this.events.push(`#${this.pending}`);
    this.pending = "";
  }
}

test(
  "pieces taken after pushes of any size make the cutter's " + "whole output, each ending where character data may end",
  () => {
    const bytes = Buffer.from(document(300, 150));
    const whole = cutJUnitText(bytes, 1 << 30);
    const reference = new Recorder();
    const all = new XmlScanner(reference);
    all.feed(whole);
    all.end();
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (const sizes of [[1], [2, 3, 5], [4096], [65_536, 7], [100_000, 1, 333]]) {
      const shrinker = new JUnitShrinker(64 * 1024, 1 << 30);
      const recorder = new Recorder();
      const scanner = new XmlScanner(recorder);
      const pieces: string[] = [];
      for (let at = 0, k = 0; at < bytes.length; k++) {
        const size = sizes[k % sizes.length]! + (sizes.length > 1 ? next() % 17 : 0);
        shrinker.push(bytes.subarray(at, at + size));
        at += size;
        const piece = shrinker.take();
        if (piece !== "") {
          pieces.push(piece);
          scanner.feed(piece);
        }
      }
      const last = shrinker.end();
      pieces.push(last);
      scanner.feed(last);
      scanner.end();
      expect(pieces.join("")).toBe(whole);
      expect(pieces.length).toBeGreaterThan(1);
      expect(recorder.events).toEqual(reference.events);
    }
  },
);

test("a file over the whole-read size is read in pieces into the same entries as its whole text", async () => {
  const text = document(Math.ceil((WHOLE_READ_BYTES + 1024 * 1024) / 600), 520);
  expect(text.length).toBeGreaterThan(WHOLE_READ_BYTES);
  const file = path.join(dir, "large.xml");
  writeFileSync(file, text);
  const expected = readBunJUnit(await readJUnitCapped(file, 1 << 28));
  const got = await readBunJUnitFile(file, 1 << 28);
  expect(got[0]!.tests.length).toBe(expected[0]!.tests.length);
  expect(got[0]!.tests.some((t) => t.status === "failed" && t.failure!.message.includes("cut"))).toBe(true);
  expect(got).toEqual(expected);
  // Past the limit: too large, as the whole read says, never a parse of part of it.
  await expect(readBunJUnitFile(file, WHOLE_READ_BYTES)).rejects.toBeInstanceOf(JUnitTooLargeError);
});

test(
  "a malformed large file fails with the whole text's message " +
    "(line and column), and a too-large one as too large first",
  async () => {
    const good = document(Math.ceil((WHOLE_READ_BYTES + 1024 * 1024) / 600), 520);
    const at = good.indexOf("<testcase", Math.floor(good.length * 0.7));
    const broken = `${good.slice(0, at)}<testcase name="a" name="b" />${good.slice(at)}`;
    const file = path.join(dir, "broken.xml");
    writeFileSync(file, broken);
    let expected = "";
    try {
      readBunJUnit(await readJUnitCapped(file, 1 << 28));
    } catch (error) {
      expected = (error as Error).message;
    }
    expect(expected).toMatch(/^malformed JUnit XML at line \d+, column \d+: /);
    const error = await readBunJUnitFile(file, 1 << 28).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BunJUnitParseError);
    expect((error as Error).message).toBe(expected);
    await expect(readBunJUnitFile(file, WHOLE_READ_BYTES)).rejects.toBeInstanceOf(JUnitTooLargeError);
  },
);

test(
  "names of the events reused for the testcases they equal " +
    "give the same entries as names built from Bun's document",
  async () => {
    const text = document(450, 120);
    const plain = readBunJUnit(text);
    // The file is read with long texts cut, as a shard's is.
    const cut = readBunJUnit(cutJUnitText(Buffer.from(text), 1 << 28));
    const names = plain[0]!.tests.filter((t) => !t.name.endsWith("(unnamed)")).map((t) => t.name);
    const file = "a.test.ts";
    const lists: { file: string; name: string }[][] = [
      names.map((name) => ({ file, name })),
      // Another order, tests missing, a control character Bun's JUnit drops, another file's test of the same name.
      [
        ...names.slice(0, 50),
        ...names.slice(120, 200),
        ...names.slice(50, 120),
        `${names[201]}\u0007`,
        ...names.slice(202),
      ].map((name) => ({ file, name })),
      [{ file: "b.test.ts", name: names[0]! }, ...names.slice(1, 30).map((name) => ({ file, name }))],
      names.map((name) => ({ file, name: `${name.slice(0, -1)}!` })),
    ];
    for (const known of lists) {
      expect(readBunJUnit(text, known)).toEqual(plain);
      const at = path.join(dir, "known.xml");
      writeFileSync(at, text);
      expect(await readBunJUnitFile(at, 1 << 28, known)).toEqual(cut);
    }
  },
);
