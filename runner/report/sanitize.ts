/**
 * Text safety for reports: tests write names and messages, and one character outside XML 1.0's `Char` production
 * (raw or as a character reference) makes a whole JUnit file unreadable for CI (docs/reports.md, "Text sanitation
 * and output caps"). Every string goes through {@link xmlSafe} before it is escaped.
 */

import { stripAnsi } from "../results/text.ts";

export { stripAnsi };

/** Everything outside XML 1.0's `Char`; with the `u` flag the surrogate range matches only lone halves. */
const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** What an illegal code point becomes: U+FFFD REPLACEMENT CHARACTER. */
export const REPLACEMENT_CHAR = "\uFFFD";

/** Replaces every code point XML 1.0 forbids with U+FFFD, so the reader sees that something was there. */
export function replaceIllegalXmlChars(text: string): string {
  return text.replace(NOT_XML_CHAR, REPLACEMENT_CHAR);
}

/** Every character {@link xmlSafe} can change: most texts have none, and one test is cheaper than two replacements. */
const MAY_BE_UNSAFE = /[\x00-\x1f\x9b\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Every character an escape function can change as well: markup and quotes. */
const MAY_CHANGE = /[\x00-\x1f\x9b\uD800-\uDFFF\uFFFE\uFFFF&<>"']/;

/** {@link stripAnsi}, then {@link replaceIllegalXmlChars}: the result is legal XML 1.0 character data once escaped. */
export function xmlSafe(text: string): string {
  return MAY_BE_UNSAFE.test(text) ? replaceIllegalXmlChars(stripAnsi(text)) : text;
}

/** Escapes {@link xmlSafe} text content: `>` too (no literal `]]>`), CR as `&#13;` (parsers turn a raw CR into LF). */
export function escapeXmlText(text: string): string {
  return text.replace(/[&<>\r]/g, (c) => TEXT_ESCAPES[c] ?? c);
}

/** Escapes a {@link xmlSafe} attribute value: tab, LF and CR as references, which normalization would make spaces. */
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
