/**
 * Text safety for reports.
 *
 * Test names and failure messages are written by tests, so they can contain
 * anything: terminal colour codes, NUL bytes, half of a surrogate pair.
 * XML 1.0 only admits the code points of its `Char` production:
 *
 *     Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
 *
 * and the rule applies to character references as well: `&#27;` is just as
 * fatal as a raw ESC byte. One such character makes the whole JUnit file
 * unreadable for CI (docs/reports.md), so every string goes through
 * {@link xmlSafe} before it is escaped.
 */

import { stripAnsi } from "../results/text.ts";

export { stripAnsi };

/**
 * Everything outside XML 1.0's `Char` production. With the `u` flag a
 * well-formed surrogate pair is one code point, so the surrogate range here
 * only matches lone halves.
 */
const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** What an illegal code point becomes: U+FFFD REPLACEMENT CHARACTER. */
export const REPLACEMENT_CHAR = "\uFFFD";

/**
 * Replaces every code point that XML 1.0 forbids (C0 controls other than
 * tab, LF and CR; U+FFFE and U+FFFF; lone surrogates) with U+FFFD, so that the
 * reader sees that something was there.
 */
export function replaceIllegalXmlChars(text: string): string {
  return text.replace(NOT_XML_CHAR, REPLACEMENT_CHAR);
}

/**
 * Every character {@link xmlSafe} can change: what starts a terminal escape
 * (ESC, the 8-bit CSI), other C0 controls, surrogates, U+FFFE and U+FFFF.
 * Most texts have none, and one test is cheaper than two replacements
 * (100,000 testcases, five attributes each: bench/README.md).
 */
const MAY_BE_UNSAFE = /[\x00-\x1f\x9b\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Every character an escape function can change as well: markup and quotes. */
const MAY_CHANGE = /[\x00-\x1f\x9b\uD800-\uDFFF\uFFFE\uFFFF&<>"']/;

/** {@link stripAnsi}, then {@link replaceIllegalXmlChars}: the result is legal XML 1.0 character data once escaped. */
export function xmlSafe(text: string): string {
  return MAY_BE_UNSAFE.test(text) ? replaceIllegalXmlChars(stripAnsi(text)) : text;
}

/**
 * Escapes text content. `>` is escaped too, so a `]]>` from a test never
 * appears literally (we never use CDATA, so nothing needs splitting), and CR
 * becomes `&#13;` because XML parsers turn a raw CR into LF.
 * Input must already be {@link xmlSafe}.
 */
export function escapeXmlText(text: string): string {
  return text.replace(/[&<>\r]/g, (c) => TEXT_ESCAPES[c] ?? c);
}

/**
 * Escapes an attribute value for use inside double or single quotes. Tab, LF
 * and CR become character references because attribute-value normalization
 * would otherwise turn each into a space. Input must already be {@link xmlSafe}.
 */
export function escapeXmlAttr(text: string): string {
  return text.replace(/[&<>"'\t\n\r]/g, (c) => ATTR_ESCAPES[c] ?? c);
}

const TEXT_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;" };
const ATTR_ESCAPES: Record<string, string> = {
  ...TEXT_ESCAPES,
  '"': "&quot;",
  "'": "&apos;",
  "\t": "&#9;",
  "\n": "&#10;",
};

/** Any string → escaped, legal XML 1.0 text content. */
export function xmlText(text: string): string {
  return MAY_CHANGE.test(text) ? escapeXmlText(xmlSafe(text)) : text;
}

/** Any string → escaped, legal XML 1.0 attribute value (without the quotes). */
export function xmlAttr(text: string): string {
  return MAY_CHANGE.test(text) ? escapeXmlAttr(xmlSafe(text)) : text;
}

// Capping lives with the ingestion caps it must agree with (runner/util/text-cap.ts).
export { capText } from "../util/text-cap.ts";
