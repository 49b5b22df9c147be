/**
 * A one-pass, event-driven scanner for the XML Bun's JUnit reporter writes, with the well-formedness checks that
 * tell a complete report from a truncated or foreign one. Not a DOM: too costly at scale (bench/README.md). Not a
 * SAX library: strict modes refuse what Bun writes (control-character references), lenient ones stop checking.
 * Not checked: which characters appear (control characters are kept on purpose) and entity references.
 */
import { APOS, EQUALS, GT, LT, QUOTE, SLASH } from "../util/bytes.ts";
import { SCAN_ELEMENTS_PER_YOUNG_COLLECTION, youngCollection } from "../util/tuning.ts";

/** The text is not well-formed XML; `offset` is where the problem was found (UTF-16 index). */
export class XmlScanError extends Error {
  override name = "XmlScanError";
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** What the scanner reports, in document order. Attribute values and text are raw (entities not decoded). */
export interface XmlHandler {
  open(name: string, attributes: Record<string, string>, selfClosing: boolean): void;
  close(name: string): void;
  /** Character data inside the root element (CDATA sections included, raw). */
  text(raw: string): void;
}

const NAME = /^[A-Za-z_:][-\w.:]*$/;

/**
 * Scans `text` and calls `handler` for each element and text run inside the root, nesting at most `maxDepth`.
 * @throws XmlScanError at the first well-formedness problem
 */
export function scanXml(text: string, handler: XmlHandler, maxDepth = 1000): void {
  const scanner = new XmlScanner(handler, maxDepth);
  scanner.feed(text);
  scanner.end();
}

/**
 * {@link scanXml} over a document in pieces, so no one string holds it whole. Each piece must end where character
 * data may end (after a `>` of markup, or inside text); error offsets count from the first piece.
 */
export class XmlScanner {
  private readonly stack: string[] = [];
  private readonly tag: StartTag = { name: "", attributes: EMPTY };
  private roots = 0;
  private elements = 0;
  /** UTF-16 units of the pieces before the current one. */
  private consumed = 0;

  constructor(
    private readonly handler: XmlHandler,
    private readonly maxDepth = 1000,
  ) {}

  /** Scans the next piece. @throws XmlScanError at the first well-formedness problem */
  feed(text: string): void {
    try {
      this.scan(text);
    } catch (error) {
      if (error instanceof XmlScanError && this.consumed > 0)
        throw new XmlScanError(error.message, error.offset + this.consumed);
      throw error;
    }
    this.consumed += text.length;
  }

  /** The document ended. @throws XmlScanError when an element is still open or there was none */
  end(): void {
    const { stack } = this;
    if (stack.length > 0) throw new XmlScanError(`unclosed element <${stack[stack.length - 1]}>`, this.consumed);
    if (this.roots === 0) throw new XmlScanError("no root element", this.consumed);
  }

  private scan(text: string): void {
    const { stack, tag, handler, maxDepth } = this;
    let roots = this.roots;
    let elements = this.elements;
    let i = 0;
    const n = text.length;
    while (i < n) {
      const lt = text.indexOf("<", i);
      const end = lt === -1 ? n : lt;
      if (end > i) {
        if (stack.length > 0) handler.text(text.slice(i, end));
        else if (text.slice(i, end).trim() !== "") throw new XmlScanError("text outside the root element", i);
      }
      if (lt === -1) break;
      if (text.startsWith("<!--", lt)) {
        i = after(text, "-->", lt + 4, "comment");
      } else if (text.startsWith("<![CDATA[", lt)) {
        if (stack.length === 0) throw new XmlScanError("CDATA outside the root element", lt);
        const close = after(text, "]]>", lt + 9, "CDATA section");
        handler.text(text.slice(lt + 9, close - 3));
        i = close;
      } else if (text.startsWith("<?", lt)) {
        i = after(text, "?>", lt + 2, "processing instruction");
      } else if (text.startsWith("<!DOCTYPE", lt) && stack.length === 0 && roots === 0) {
        // Without an internal subset: Bun never writes a DOCTYPE.
        i = after(text, ">", lt + 9, "DOCTYPE");
      } else if (text[lt + 1] === "/") {
        const gt = text.indexOf(">", lt);
        if (gt === -1) throw new XmlScanError("unterminated end tag", lt);
        const name = text.slice(lt + 2, gt).trimEnd();
        const open = stack.pop();
        if (open !== name)
          throw new XmlScanError(
            open === undefined
              ? `end tag </${name}> without a start tag`
              : `end tag </${name}> does not match <${open}>`,
            lt,
          );
        handler.close(name);
        i = gt + 1;
      } else {
        // A plainly well-formed start tag (nearly all) is read in one pass; anything else goes the long way.
        let gt = bunTestcaseTag(text, lt, tag);
        if (gt === -1) gt = wellFormedStartTag(text, lt, tag);
        let name = tag.name;
        let attributes = tag.attributes;
        if (gt === -1) {
          gt = tagEnd(text, lt);
          const bodyEnd = text.charCodeAt(gt - 1) === SLASH ? gt - 1 : gt;
          let nameEnd = lt + 1;
          while (nameEnd < bodyEnd && !isSpace(text.charCodeAt(nameEnd))) nameEnd++;
          name = elementName(text, lt + 1, nameEnd, lt);
          if (stack.length === 0 && roots > 0) throw new XmlScanError("more than one root element", lt);
          attributes = parseAttributes(text, nameEnd, bodyEnd, lt);
        }
        const selfClosing = text.charCodeAt(gt - 1) === SLASH;
        if (stack.length === 0) {
          roots += 1;
          if (roots > 1) throw new XmlScanError("more than one root element", lt);
        }
        handler.open(name, attributes, selfClosing);
        // Collecting each tag's little garbage now and then keeps the runner's peak lower (util/tuning.ts).
        if (++elements % SCAN_ELEMENTS_PER_YOUNG_COLLECTION === 0) youngCollection();
        if (selfClosing) handler.close(name);
        else {
          if (stack.length >= maxDepth) throw new XmlScanError(`elements nested deeper than ${maxDepth}`, lt);
          stack.push(name);
        }
        i = gt + 1;
      }
    }
    this.roots = roots;
    this.elements = elements;
  }
}

/** Index just past the next `terminator` at or after `from`. */
function after(text: string, terminator: string, from: number, what: string): number {
  const at = text.indexOf(terminator, from);
  if (at === -1) throw new XmlScanError(`unterminated ${what}`, from);
  return at + terminator.length;
}

/** What {@link wellFormedStartTag} read. */
interface StartTag {
  name: string;
  attributes: Record<string, string>;
}

const EMPTY: Record<string, string> = Object.freeze(Object.create(null));

/** A `<testcase>` start tag exactly as Bun writes one for a test (six attributes, fixed order); plainly well formed. */
const BUN_TESTCASE =
  /<testcase name="([^"<]*)" classname="([^"<]*)" time="([^"<]*)" file="([^"<]*)" line="([^"<]*)" assertions="([^"<]*)" ?\/?>/y;

/**
 * Reads the start tag at `lt` when it matches BUN_TESTCASE, in one regex match (util/tuning.ts).
 * @returns the index of the tag's `>` (name and attributes in `tag`), or -1 for any other tag
 */
function bunTestcaseTag(text: string, lt: number, tag: StartTag): number {
  // "<t": one comparison rules out every other tag before the expression runs.
  if (text.charCodeAt(lt + 1) !== 0x74) return -1;
  BUN_TESTCASE.lastIndex = lt;
  const match = BUN_TESTCASE.exec(text);
  if (match === null) return -1;
  const attributes = Object.create(null) as Record<string, string>;
  attributes.name = match[1]!;
  attributes.classname = match[2]!;
  attributes.time = match[3]!;
  attributes.file = match[4]!;
  attributes.line = match[5]!;
  attributes.assertions = match[6]!;
  tag.name = "testcase";
  tag.attributes = attributes;
  return lt + match[0].length - 1;
}

/**
 * Reads the start tag at `lt` in one pass when it is plainly well formed; it accepts exactly what the long way
 * (tagEnd, elementName, parseAttributes) accepts, which reports anything else (util/tuning.ts).
 * @returns the index of the tag's `>` (name and attributes in `tag`), or -1 to take the long way
 */
function wellFormedStartTag(text: string, lt: number, tag: StartTag): number {
  const n = text.length;
  let p = lt + 1;
  if (p >= n || !isNameStart(text.charCodeAt(p))) return -1;
  while (p < n && isNameChar(text.charCodeAt(p))) p++;
  const nameEnd = p;
  // Any "<" before the end makes the tag the long way's to judge.
  const nextLt = text.indexOf("<", p);
  const attributes = Object.create(null) as Record<string, string>;
  for (;;) {
    const at = p;
    while (p < n && isSpace(text.charCodeAt(p))) p++;
    if (p >= n) return -1;
    let c = text.charCodeAt(p);
    if (c === GT || (c === SLASH && text.charCodeAt(p + 1) === GT)) {
      const gt = c === GT ? p : p + 1;
      if (nextLt !== -1 && nextLt < gt) return -1;
      tag.name = elementName(text, lt + 1, nameEnd, lt);
      tag.attributes = attributes;
      return gt;
    }
    if (p === at || !isNameStart(c)) return -1;
    const nameStart = p++;
    while (p < n && isNameChar(text.charCodeAt(p))) p++;
    const name = attributeName(text, nameStart, p);
    while (p < n && isSpace(text.charCodeAt(p))) p++;
    if (p >= n || text.charCodeAt(p) !== EQUALS) return -1;
    p++;
    while (p < n && isSpace(text.charCodeAt(p))) p++;
    c = p < n ? text.charCodeAt(p) : 0;
    if (c !== QUOTE && c !== APOS) return -1;
    const close = text.indexOf(c === QUOTE ? '"' : "'", p + 1);
    if (close === -1 || (nextLt !== -1 && nextLt < close) || attributes[name] !== undefined) return -1;
    attributes[name] = text.slice(p + 1, close);
    p = close + 1;
  }
}

/** Index of the `>` ending the start tag at `lt` (a `>` inside a quoted value does not end it). */
function tagEnd(text: string, lt: number): number {
  let quote = 0;
  for (let j = lt + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (quote !== 0) {
      if (c === quote) quote = 0;
    } else if (c === QUOTE || c === APOS) quote = c;
    else if (c === GT) return j;
    else if (c === LT) break;
  }
  throw new XmlScanError("unterminated start tag", lt);
}

/** JavaScript's `\s` (Unicode spaces included). */
function isSpace(c: number): boolean {
  return (
    c === 0x20 ||
    (c >= 0x09 && c <= 0x0d) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** `[A-Za-z_:]`: the first character of an attribute name. */
const isNameStart = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c === 0x3a;
/** `[-\w.:]`: any later character of an attribute name. */
const isNameChar = (c: number) => isNameStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e;

/** Element names seen so far (checked against NAME when first seen), each one string. */
const seenElements: string[] = [];

/** `text.slice(start, end)` as an element name, checked; the one string kept for it. */
function elementName(text: string, start: number, end: number, lt: number): string {
  const length = end - start;
  for (let i = 0; i < seenElements.length; i++) {
    const known = seenElements[i]!;
    if (known.length === length && text.startsWith(known, start)) return known;
  }
  const name = text.slice(start, end);
  if (!NAME.test(name)) throw new XmlScanError(`bad element name "${name.slice(0, 40)}"`, lt);
  if (seenElements.length < MAX_SEEN_NAMES) seenElements.push(name);
  return name;
}

/** Attribute names seen so far, each one string (a document uses a handful, on every tag). */
const seenNames: string[] = [];
const MAX_SEEN_NAMES = 64;

/** The one kept string for the attribute name at `text[start, end)`: known strings are cheaper keys. */
function attributeName(text: string, start: number, end: number): string {
  const length = end - start;
  for (let i = 0; i < seenNames.length; i++) {
    const known = seenNames[i]!;
    if (known.length === length && text.startsWith(known, start)) return known;
  }
  const name = text.slice(start, end);
  if (seenNames.length < MAX_SEEN_NAMES) seenNames.push(name);
  return name;
}

/** The attributes of the start tag at `lt`, read from `text[from, end)` without slicing the tag. */
function parseAttributes(text: string, from: number, end: number, lt: number): Record<string, string> {
  // No prototype: an attribute named "__proto__" is kept like any other.
  const out = Object.create(null) as Record<string, string>;
  const bad = () => new XmlScanError("bad attribute syntax", lt);
  // Values hold a "<" nearly never, so each is found with one indexOf.
  const nextLt = text.indexOf("<", from);
  const ltInside = nextLt !== -1 && nextLt < end;
  for (let at = from; ; ) {
    let p = at;
    while (p < end && isSpace(text.charCodeAt(p))) p++;
    if (p === end) return out;
    if (p === at || !isNameStart(text.charCodeAt(p))) throw bad();
    const nameStart = p++;
    while (p < end && isNameChar(text.charCodeAt(p))) p++;
    const name = attributeName(text, nameStart, p);
    while (p < end && isSpace(text.charCodeAt(p))) p++;
    if (p >= end || text.charCodeAt(p) !== EQUALS) throw bad();
    p++;
    while (p < end && isSpace(text.charCodeAt(p))) p++;
    const quote = p < end ? text.charCodeAt(p) : 0;
    if (quote !== QUOTE && quote !== APOS) throw bad();
    const close = text.indexOf(quote === QUOTE ? '"' : "'", p + 1);
    if (close === -1 || close >= end) throw bad();
    if (ltInside) {
      const lessThan = text.indexOf("<", p + 1);
      if (lessThan !== -1 && lessThan < close) throw bad();
    }
    if (out[name] !== undefined) throw new XmlScanError(`attribute "${name}" repeated`, lt);
    out[name] = text.slice(p + 1, close);
    at = close + 1;
  }
}
