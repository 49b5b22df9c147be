/**
 * Reader for the JUnit file of `bun test --reporter=junit` (docs/bun-behaviour.md, "Bun's JUnit reporter"), read
 * in one pass in document order (xml-scan.ts), no DOM. Bun writes no retry information here: events have it.
 */
import { scanXml, XmlScanError, XmlScanner } from "./xml-scan.ts";
import { readJUnitPieces } from "./junit-read.ts";
import type { Failure, TestResult } from "./report-model.ts";

/** The tests of one file in Bun's JUnit output. */
export interface BunJUnitFile {
  /** As Bun names it: relative to the child's cwd when inside it, else absolute; forward slashes. */
  file: string;
  /** In Bun's order; `name` is the describe path joined with " > ". */
  tests: TestResult[];
}

/** Bun's JUnit text is not well-formed XML or not shaped like Bun's output. */
export class BunJUnitParseError extends Error {
  override name = "BunJUnitParseError";
}

/** Joins describe blocks and the test name, as in the model (`outer > inner > test`). */
const NAME_SEPARATOR = " > ";

/** Deeper than any real nesting, but bounded: a hostile file must not exhaust the walker's stack. */
const MAX_DEPTH = 1000;

/**
 * Parses Bun's JUnit text into one entry per test file: `<failure>`/`<error>` failed, `<skipped message="TODO"/>`
 * todo, other `<skipped>` skipped, else passed; `time` seconds to `durationMs` (unreadable: 0).
 * @param known the tests the events saw, in event order: a testcase whose full name equals the next one's
 *   reuses that string, so names are not held twice (bench/README.md).
 * @throws BunJUnitParseError (one-line message) when the text is not well-formed XML or its root is not `<testsuites>`.
 */
export function readBunJUnit(xmlText: string, known?: readonly KnownTest[]): BunJUnitFile[] {
  const reader = new JUnitReader(known);
  try {
    scanXml(xmlText, reader, MAX_DEPTH);
  } catch (error) {
    if (error instanceof XmlScanError) {
      const { line, col } = lineAndColumn(xmlText, error.offset);
      throw new BunJUnitParseError(oneLine(`malformed JUnit XML at line ${line}, column ${col}: ${error.message}`));
    }
    throw error;
  }
  if (reader.rootName !== "testsuites") {
    throw new BunJUnitParseError(`unexpected JUnit layout: expected one <testsuites> root, found <${reader.rootName}>`);
  }
  return reader.files;
}

/**
 * {@link readBunJUnit} on the file at `file`, scanned piece by piece (junit-read.ts), never held whole.
 * @param maxBytes the limit after the cuts (`junitByteLimit` for a shard)
 * @param known as for {@link readBunJUnit}
 * @throws what `readJUnitPieces` throws, and BunJUnitParseError as {@link readBunJUnit}
 */
export async function readBunJUnitFile(
  file: string,
  maxBytes: number,
  known?: readonly KnownTest[],
): Promise<BunJUnitFile[]> {
  const reader = new JUnitReader(known);
  const scanner = new XmlScanner(reader, MAX_DEPTH);
  // For an error's line and column; a piece's lines are counted once the next one comes.
  let lines = 0;
  let lineStart = 0;
  let before = 0;
  let current = "";
  const where = (error: XmlScanError) => {
    const at = error.offset - before;
    const head = current.slice(0, Math.max(0, at));
    const lastNewline = head.lastIndexOf("\n");
    const line = lines + head.split("\n").length;
    return { line, col: lastNewline === -1 ? error.offset - lineStart + 1 : at - lastNewline };
  };
  try {
    await readJUnitPieces(file, maxBytes, (piece) => {
      for (let nl = current.indexOf("\n"); nl !== -1; nl = current.indexOf("\n", nl + 1)) {
        lines += 1;
        lineStart = before + nl + 1;
      }
      before += current.length;
      current = piece;
      scanner.feed(piece);
    });
    scanner.end();
  } catch (error) {
    if (error instanceof XmlScanError) {
      const { line, col } = where(error);
      throw new BunJUnitParseError(oneLine(`malformed JUnit XML at line ${line}, column ${col}: ${error.message}`));
    }
    throw error;
  }
  if (reader.rootName !== "testsuites") {
    throw new BunJUnitParseError(`unexpected JUnit layout: expected one <testsuites> root, found <${reader.rootName}>`);
  }
  return reader.files;
}

/** A test the inspector events saw: its file (as planned) and its full name (`outer > inner > test`). */
export interface KnownTest {
  readonly file: string;
  readonly name: string;
}

/** The names of {@link KnownTest}s by file, in event order, with a cursor at the next one not yet given. */
class KnownNames {
  private readonly byFile = new Map<string, string[]>();
  private names: string[] = [];
  private next = 0;

  constructor(known: readonly KnownTest[]) {
    for (const t of known) {
      const names = this.byFile.get(t.file);
      if (names === undefined) this.byFile.set(t.file, [t.name]);
      else names.push(t.name);
    }
  }

  /** A file's suite begins: its known names (none when Bun names the file otherwise). */
  startFile(file: string): void {
    this.names = this.byFile.get(file) ?? [];
    this.next = 0;
  }

  /** The next known name when it is exactly `prefix` + `own` (then passed); undefined otherwise. */
  take(prefix: string, own: string): string | undefined {
    const name = this.names[this.next];
    if (
      name === undefined ||
      name.length !== prefix.length + own.length ||
      !name.endsWith(own) ||
      !name.startsWith(prefix)
    )
      return undefined;
    this.next += 1;
    return name;
  }
}

/** What an open element is to the walk; "other" is ignored with everything inside it. */
type Role = "root" | "file" | "describe" | "case" | "failure" | "skipped" | "other";

/**
 * Builds the entries from scanner events: the root's suites are files, nested suites describe blocks, a
 * testcase's first failure/error and first skip marker count, a failure's direct text is its details.
 */
class JUnitReader {
  rootName = "";
  readonly files: BunJUnitFile[] = [];
  private readonly roles: Role[] = [];
  /**
   * `outer > inner > ` of each open describe block, innermost last: one concatenation per testcase; joined,
   * not `+`, so a name holds no rope over a slice of the document.
   */
  private readonly prefixes: string[] = [];
  private readonly known: KnownNames | null;

  constructor(known: readonly KnownTest[] | undefined) {
    this.known = known === undefined || known.length === 0 ? null : new KnownNames(known);
  }

  private file: BunJUnitFile | null = null;
  private test: TestResult | null = null;
  private failure: { errorName: string | undefined; message: string | undefined; text: string } | null = null;
  private failureSeen = false;
  private skipped: string | null = null;

  open(name: string, attrs: Record<string, string>): void {
    const parent = this.roles[this.roles.length - 1];
    let role: Role = "other";
    if (parent === undefined) {
      this.rootName = name;
      role = "root";
    } else if (name === "testsuite" && parent === "root") {
      // A copy: a slice of the document would keep all of it alive.
      const file = ownCopy((decoded(attrs.file) ?? decoded(attrs.name) ?? "").replaceAll("\\", "/"));
      this.file = { file, tests: [] };
      this.known?.startFile(file);
      this.files.push(this.file);
      role = "file";
    } else if (name === "testsuite" && (parent === "file" || parent === "describe")) {
      this.prefixes.push(
        [this.prefixes[this.prefixes.length - 1] ?? "", decoded(attrs.name) ?? "", NAME_SEPARATOR].join(""),
      );
      role = "describe";
    } else if (name === "testcase" && (parent === "file" || parent === "describe")) {
      this.test = testcaseOf(attrs, this.prefixes[this.prefixes.length - 1] ?? "", this.file!.file, this.known);
      this.file!.tests.push(this.test);
      this.failure = null;
      this.failureSeen = false;
      this.skipped = null;
      role = "case";
    } else if (parent === "case" && (name === "failure" || name === "error") && !this.failureSeen) {
      this.failureSeen = true;
      // Bun's `type` is the error's name (any `Error.name` a test sets): free text, never a failure kind.
      this.failure = { errorName: decoded(attrs.type), message: decoded(attrs.message), text: "" };
      role = "failure";
    } else if (parent === "case" && name === "skipped" && this.skipped === null) {
      this.skipped = decoded(attrs.message) ?? "";
      role = "skipped";
    }
    this.roles.push(role);
  }

  close(): void {
    const role = this.roles.pop();
    if (role === "describe") this.prefixes.pop();
    else if (role === "file") this.file = null;
    else if (role === "case") this.finishTest();
  }

  text(raw: string): void {
    if (this.failure && this.roles[this.roles.length - 1] === "failure") this.failure.text += raw;
  }

  /** A failure outranks a skip marker: a failed test must never read as skipped. */
  private finishTest(): void {
    const result = this.test!;
    this.test = null;
    if (this.failure) {
      const details = decodeXmlEntities(this.failure.text);
      result.status = "failed";
      const { errorName } = this.failure;
      const message = this.failure.message ?? details.split("\n", 1)[0] ?? "";
      const failure: Failure =
        errorName === undefined ? { type: "failure", message } : { type: "failure", errorName, message };
      if (details !== "") failure.details = details;
      result.failure = failure;
    } else if (this.skipped !== null) {
      result.status = this.skipped === "TODO" ? "todo" : "skipped";
    }
  }
}

/** `text` in memory of its own: JavaScriptCore's slices keep the string they were cut from alive. */
function ownCopy(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}

/** An attribute value, entity-decoded; undefined when absent. */
const decoded = (value: string | undefined) => (value === undefined ? undefined : decodeXmlEntities(value));

/** A testcase's entry, passed until its children say otherwise; `prefix` its describe path, `known` names to reuse. */
function testcaseOf(attrs: Record<string, string>, prefix: string, file: string, known: KnownNames | null): TestResult {
  const own = decoded(attrs.name) ?? "";
  const name = known?.take(prefix, own) ?? (prefix === "" ? own : [prefix, own].join(""));
  const result: TestResult = {
    name,
    file,
    status: "passed",
    durationMs: secondsToMs(decoded(attrs.time)),
    retries: 0,
    flaky: false,
    attemptFailures: [],
    synthetic: false,
  };
  const line = attrs.line === undefined ? NaN : Number(decoded(attrs.line));
  if (Number.isSafeInteger(line) && line >= 0) result.line = line;
  return result;
}

/** 1-based line and column of a UTF-16 offset, for error messages. */
function lineAndColumn(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, offset);
  const lastNewline = before.lastIndexOf("\n");
  return { line: before.split("\n").length, col: offset - lastNewline };
}

/** Seconds as Bun writes them → milliseconds, rounded to 1 µs; bad values → 0. */
function secondsToMs(seconds: string | undefined): number {
  const value = seconds === undefined ? NaN : Number(seconds);
  if (!Number.isFinite(value) || value < 0) return 0;
  return Math.round(value * 1_000_000) / 1000;
}

const PREDEFINED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** Decodes XML's five entities and numeric references; out-of-range and unknown ones stay as written. */
function decodeXmlEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(
    /&(?:#x([0-9a-fA-F]+)|#([0-9]+)|([A-Za-z]+));/g,
    (whole, hex?: string, dec?: string, name?: string) => {
      if (name !== undefined) return PREDEFINED[name] ?? whole;
      const codePoint = hex !== undefined ? parseInt(hex, 16) : Number(dec);
      return codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : whole;
    },
  );
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ");
}

/**
 * Renames Bun's entries to planned names: Bun writes paths relative to the cwd at report time, which
 * `process.chdir` moves; an entry matches the one planned file whose absolute path ends with it, else stays.
 * @param planned the shard's files, relative to `root`
 * @param root absolute run root
 */
export function alignJUnitFiles(files: BunJUnitFile[], planned: readonly string[], root: string): BunJUnitFile[] {
  const known = new Set(planned);
  return files.map((entry) => {
    if (known.has(entry.file)) return entry;
    const tail = entry.file.replace(/^\/+/, "");
    const matches = planned.filter((p) => {
      const abs = `${root.replace(/\/+$/, "")}/${p}`;
      return abs === `/${tail}` || abs.endsWith(`/${tail}`);
    });
    if (matches.length !== 1) return entry;
    const file = matches[0]!;
    return { file, tests: entry.tests.map((t) => ({ ...t, file })) };
  });
}
