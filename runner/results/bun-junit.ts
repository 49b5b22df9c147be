/**
 * Reader for the JUnit file that `bun test --reporter=junit
 * --reporter-outfile=F` writes (layout measured on Bun 1.4.4):
 *
 *     <testsuites>                       the run
 *       <testsuite name=FILE file=FILE>  one per test file
 *         <testsuite name=DESCRIBE>      one per describe block, nested
 *           <testcase name=TEST …>       `time` in seconds, `line`, `file`
 *             <failure type message>text</failure> | <skipped/> | <skipped message="TODO"/>
 *
 * Tests and describe blocks are interleaved in definition order, so the
 * document is parsed with fast-xml-parser's `preserveOrder` (the plain object
 * form groups children by tag and would lose that order).
 *
 * Bun writes no retry information here; `retries`, `flaky` and
 * `attemptFailures` come from elsewhere (inspector events).
 */
import { XMLParser, XMLValidator } from "fast-xml-parser";
import type { TestResult } from "./model.ts";

/** The tests of one file in Bun's JUnit output. */
export interface BunJUnitFile {
  /**
   * The file as Bun names it (the top-level suite's `file`, else `name`
   * attribute): relative to the child's cwd when inside it, absolute
   * otherwise; always with forward slashes.
   */
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

/** Deeper than any real describe nesting, but bounded (the library's default is 100). */
const MAX_DEPTH = 1000;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: false,
  // Entities are decoded by decodeXmlEntities below: the library's decoder
  // leaves numeric references such as `&#10;` alone and silently drops ones
  // for control characters, and we want every character kept (sanitizing
  // happens when reports are written).
  processEntities: false,
  maxNestedTags: MAX_DEPTH,
});

/** A node of fast-xml-parser's preserveOrder form: `{ tag: children, ":@"?: attrs }` or `{ "#text": s }`. */
type OrderedNode = Record<string, unknown>;

/**
 * Parses the text of Bun's JUnit file into one entry per test file.
 *
 * Status mapping: `<failure>` or `<error>` → `failed` (with failure
 * {type, message, details = element text}); `<skipped message="TODO"/>` →
 * `todo`; other `<skipped>` → `skipped`; no child → `passed`. `time`
 * (seconds) becomes `durationMs`; a missing or unreadable time becomes 0.
 *
 * @throws BunJUnitParseError (one-line message) when the text is not
 *   well-formed XML or its root is not `<testsuites>`.
 */
export function readBunJUnit(xmlText: string): BunJUnitFile[] {
  const check = XMLValidator.validate(xmlText);
  if (check !== true) {
    const { msg, line, col } = check.err;
    throw new BunJUnitParseError(oneLine(`malformed JUnit XML at line ${line}, column ${col}: ${msg}`));
  }
  let doc: OrderedNode[];
  try {
    doc = parser.parse(xmlText) as OrderedNode[];
  } catch (error) {
    throw new BunJUnitParseError(oneLine(`malformed JUnit XML: ${(error as Error).message}`));
  }
  const roots = doc.filter((node) => tagOf(node) !== undefined && tagOf(node) !== "?xml");
  const root = roots[0];
  if (roots.length !== 1 || root === undefined || tagOf(root) !== "testsuites") {
    throw new BunJUnitParseError(
      `unexpected JUnit layout: expected one <testsuites> root, found ${roots.map((r) => `<${tagOf(r)}>`).join(", ") || "none"}`,
    );
  }
  return childElements(root, "testsuite").map((suite) => {
    const attrs = attributesOf(suite);
    const file = (attrs.file ?? attrs.name ?? "").replaceAll("\\", "/");
    const tests: TestResult[] = [];
    collectTests(suite, [], file, tests);
    return { file, tests };
  });
}

/** Walks a suite in document order; nested suites are describe blocks. */
function collectTests(suite: OrderedNode, describePath: string[], file: string, out: TestResult[]): void {
  for (const child of childrenOf(suite)) {
    const tag = tagOf(child);
    if (tag === "testsuite") {
      collectTests(child, [...describePath, attributesOf(child).name ?? ""], file, out);
    } else if (tag === "testcase") {
      out.push(toTestResult(child, describePath, file));
    }
  }
}

function toTestResult(testcase: OrderedNode, describePath: string[], file: string): TestResult {
  const attrs = attributesOf(testcase);
  const result: TestResult = {
    name: [...describePath, attrs.name ?? ""].join(NAME_SEPARATOR),
    file,
    status: "passed",
    durationMs: secondsToMs(attrs.time),
    retries: 0,
    flaky: false,
    attemptFailures: [],
    synthetic: false,
  };
  const line = attrs.line === undefined ? NaN : Number(attrs.line);
  if (Number.isSafeInteger(line) && line >= 0) result.line = line;

  const children = childrenOf(testcase);
  const failure = children.find((c) => tagOf(c) === "failure" || tagOf(c) === "error");
  const skipped = children.find((c) => tagOf(c) === "skipped");
  if (failure !== undefined) {
    // A failure outranks a skip marker: a test that failed must never read as skipped.
    const fAttrs = attributesOf(failure);
    const details = textOf(failure);
    result.status = "failed";
    result.failure = {
      type: fAttrs.type ?? tagOf(failure) ?? "failure",
      message: fAttrs.message ?? details.split("\n", 1)[0] ?? "",
    };
    if (details !== "") result.failure.details = details;
  } else if (skipped !== undefined) {
    result.status = attributesOf(skipped).message === "TODO" ? "todo" : "skipped";
  }
  return result;
}

/** Seconds as Bun writes them ("0.000012") → milliseconds, rounded to 1 µs; bad values → 0. */
function secondsToMs(seconds: string | undefined): number {
  const value = seconds === undefined ? NaN : Number(seconds);
  if (!Number.isFinite(value) || value < 0) return 0;
  return Math.round(value * 1_000_000) / 1000;
}

function tagOf(node: OrderedNode): string | undefined {
  return Object.keys(node).find((key) => key !== ":@");
}

function childrenOf(node: OrderedNode): OrderedNode[] {
  const tag = tagOf(node);
  const value = tag === undefined ? undefined : node[tag];
  return Array.isArray(value) ? (value as OrderedNode[]) : [];
}

function childElements(node: OrderedNode, tag: string): OrderedNode[] {
  return childrenOf(node).filter((child) => tagOf(child) === tag);
}

/** Attribute values, entity-decoded. */
function attributesOf(node: OrderedNode): Record<string, string | undefined> {
  const raw = node[":@"];
  const out: Record<string, string | undefined> = {};
  if (raw !== null && typeof raw === "object") {
    for (const [key, value] of Object.entries(raw)) {
      if (typeof value === "string") out[key] = decodeXmlEntities(value);
    }
  }
  return out;
}

/** Concatenated, entity-decoded text content of an element. */
function textOf(node: OrderedNode): string {
  return childrenOf(node)
    .map((child) => (typeof child["#text"] === "string" ? decodeXmlEntities(child["#text"]) : ""))
    .join("");
}

const PREDEFINED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/**
 * Decodes XML's five predefined entities and numeric character references.
 * Every code point is kept as is, even ones XML 1.0 forbids; references to
 * values beyond U+10FFFF and unknown named entities stay as written.
 */
function decodeXmlEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(?:#x([0-9a-fA-F]+)|#([0-9]+)|([A-Za-z]+));/g, (whole, hex?: string, dec?: string, name?: string) => {
    if (name !== undefined) return PREDEFINED[name] ?? whole;
    const codePoint = hex !== undefined ? parseInt(hex, 16) : Number(dec);
    return codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : whole;
  });
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ");
}

/**
 * Renames Bun's JUnit file entries to the planned names. Bun writes paths
 * relative to the process's working directory when it writes the report, so
 * a test that called `process.chdir` moves them (measured: after a chdir to
 * "/", "tmp/x/a.test.ts" instead of "a.test.ts"). An entry that is not a
 * planned name is matched to the one planned file whose absolute path ends
 * with it; anything ambiguous is left as it is.
 *
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
