/**
 * Test-written text made safe to print where a line of it could pass for one of shardguard's (a terminal,
 * GitHub's `::error` lines, Markdown): escape sequences removed whole, other controls shown, never obeyed.
 */

// ECMA-48 CSI, string sequences (OSC, DCS, …) and other ESC sequences, whole, so no `[31m` debris stays;
// an unterminated string sequence loses only its introducer, so the text after it stays readable.
const ANSI_SEQUENCE =
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[\x20-\x2f]*[\x30-\x7e]?/g;

// Without the lone ESC, which is then shown.
const WHOLE_SEQUENCE =
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[\x20-\x2f]*[\x30-\x7e]/g;

/** Removes terminal escape sequences (colours, cursor moves, hyperlinks, titles). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_SEQUENCE, "");
}

// Never printed as themselves: controls but tab, line separators, and bidi overrides (they reorder a line).
const SHOWN = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHOWN_BUT_LF = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const MAY_CHANGE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A control character as shown: C0 and DEL as Unicode control pictures (`␍`, `␛`), others as `\uXXXX`. */
export function visibleControl(c: string): string {
  const code = c.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return "\u2421";
  return `\\u${code.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** `text` on one line: escape sequences removed, every control character shown, line breaks included. */
export function consoleLine(text: string): string {
  if (!MAY_CHANGE.test(text)) return text;
  return text.replace(WHOLE_SEQUENCE, "").replace(SHOWN, visibleControl);
}

/** As {@link consoleLine}, but LF (or CR LF) stays a break for the caller to prefix; a lone CR is shown. */
export function consoleLines(text: string): string {
  if (!MAY_CHANGE.test(text)) return text;
  return text.replace(WHOLE_SEQUENCE, "").replace(/\r\n/g, "\n").replace(SHOWN_BUT_LF, visibleControl);
}
