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

/** JSON text made safe inside `<script type="application/json">`: `<` (so no `</script>` or `<!--` from a test
 * name), U+2028 and U+2029 escaped, each reading back as the same character inside a JSON string. */
export function jsonForScript(json: string): string {
  return json.replace(/[<\u2028\u2029]/g, (c) => SCRIPT_ESCAPES[c]!);
}
