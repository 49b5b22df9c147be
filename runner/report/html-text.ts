/**
 * Text made safe for report.html (report/html.ts): HTML-escaped text for
 * elements and attributes, and JSON made safe inside a `<script>` element.
 */

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** `text` for an HTML element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

const SCRIPT_ESCAPES: Record<string, string> = { "<": "\\u003c", "\u2028": "\\u2028", "\u2029": "\\u2029" };

/**
 * JSON text (as JSON.stringify writes it) made safe as the content of a
 * `<script type="application/json">` element: every `<` becomes `\u003c`, so
 * neither `</script>` nor `<!--` in a test's name can end or change the
 * element, and U+2028/U+2029 are escaped too (valid in JSON, but line
 * breaks to older JavaScript parsers). JSON only has `<` inside strings,
 * where the escape reads back as the same character.
 */
export function jsonForScript(json: string): string {
  return json.replace(/[<\u2028\u2029]/g, (c) => SCRIPT_ESCAPES[c]!);
}
