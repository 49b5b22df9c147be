/**
 * A one-pass, event-driven scanner for the XML that `bun test
 * --reporter=junit` writes, with the well-formedness checks that tell a
 * complete report from a truncated or foreign one.
 *
 * Why not a DOM: Bun's JUnit of 100,000 tests is ~10 MB, and parsing it into
 * fast-xml-parser's ordered DOM (after a separate validation pass) took
 * ~1 s and over 200 MiB of short-lived objects in the runner, the largest
 * part of its peak (bench/README.md). The callers need one walk in document
 * order, so events are enough. Why not a SAX library (sax, saxes): both
 * refuse, in strict mode, what Bun really writes and we must keep (character
 * references to control characters such as `&#27;` and raw control
 * characters in failure messages), and their lenient modes stop checking
 * the structure we rely on.
 *
 * Checked: one root element and nothing but whitespace, comments,
 * processing instructions or a DOCTYPE outside it; element and attribute
 * names; attribute syntax, quoting and uniqueness (no `<` in a value);
 * every start tag closed by a matching end tag; comments, CDATA sections and
 * processing instructions terminated. Not checked: which characters appear
 * (control characters are kept on purpose) and entity references (decoded,
 * or left as written, by the caller).
 */

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
/** One attribute, with its leading whitespace: ` name = "value"` or `'value'`. */
const ATTRIBUTE = /\s+([A-Za-z_:][-\w.:]*)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/y;
const SPACE_TAIL = /\s*$/y;

/**
 * Scans `text` and calls `handler` for each element and text run inside
 * the root. Nesting depth is bounded by `maxDepth`.
 *
 * @throws XmlScanError at the first well-formedness problem
 */
export function scanXml(text: string, handler: XmlHandler, maxDepth = 1000): void {
  const stack: string[] = [];
  let roots = 0;
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
      // Without an internal subset (Bun never writes one, nor a DOCTYPE at all).
      i = after(text, ">", lt + 9, "DOCTYPE");
    } else if (text[lt + 1] === "/") {
      const gt = text.indexOf(">", lt);
      if (gt === -1) throw new XmlScanError("unterminated end tag", lt);
      const name = text.slice(lt + 2, gt).trimEnd();
      const open = stack.pop();
      if (open !== name) throw new XmlScanError(open === undefined ? `end tag </${name}> without a start tag` : `end tag </${name}> does not match <${open}>`, lt);
      handler.close(name);
      i = gt + 1;
    } else {
      const gt = tagEnd(text, lt);
      const selfClosing = text[gt - 1] === "/";
      const body = text.slice(lt + 1, selfClosing ? gt - 1 : gt);
      const nameEnd = body.search(/[\s]|$/);
      const name = body.slice(0, nameEnd);
      if (!NAME.test(name)) throw new XmlScanError(`bad element name "${name.slice(0, 40)}"`, lt);
      if (stack.length === 0) {
        roots += 1;
        if (roots > 1) throw new XmlScanError("more than one root element", lt);
      }
      const attributes = parseAttributes(body, nameEnd, lt);
      handler.open(name, attributes, selfClosing);
      if (selfClosing) handler.close(name);
      else {
        if (stack.length >= maxDepth) throw new XmlScanError(`elements nested deeper than ${maxDepth}`, lt);
        stack.push(name);
      }
      i = gt + 1;
    }
  }
  if (stack.length > 0) throw new XmlScanError(`unclosed element <${stack[stack.length - 1]}>`, n);
  if (roots === 0) throw new XmlScanError("no root element", n);
}

/** Index just past the next `terminator` at or after `from`. */
function after(text: string, terminator: string, from: number, what: string): number {
  const at = text.indexOf(terminator, from);
  if (at === -1) throw new XmlScanError(`unterminated ${what}`, from);
  return at + terminator.length;
}

/** Index of the `>` ending the start tag at `lt` (a `>` inside a quoted value does not end it). */
function tagEnd(text: string, lt: number): number {
  let quote = "";
  for (let j = lt + 1; j < text.length; j++) {
    const c = text[j];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ">") return j;
    else if (c === "<") break;
  }
  throw new XmlScanError("unterminated start tag", lt);
}

/** The attributes of a start tag's body (after its name); every character must belong to one. */
function parseAttributes(body: string, from: number, lt: number): Record<string, string> {
  // No prototype: an attribute named "__proto__" is kept like any other.
  const out = Object.create(null) as Record<string, string>;
  let at = from;
  ATTRIBUTE.lastIndex = at;
  for (let m = ATTRIBUTE.exec(body); m !== null; m = ATTRIBUTE.exec(body)) {
    const name = m[1]!;
    if (Object.hasOwn(out, name)) throw new XmlScanError(`attribute "${name}" repeated`, lt);
    out[name] = m[2] ?? m[3] ?? "";
    at = ATTRIBUTE.lastIndex;
  }
  SPACE_TAIL.lastIndex = at;
  if (!SPACE_TAIL.test(body) || SPACE_TAIL.lastIndex !== body.length) throw new XmlScanError("bad attribute syntax", lt);
  return out;
}
