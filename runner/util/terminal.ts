/**
 * Text a test wrote (its output, its name, its file's name, its error), made
 * safe to print where a line of it could pass for one of shardguard's: a
 * terminal, a CI log (GitHub reads `::error …` at the start of a line, and a
 * carriage return starts one), a Markdown summary. Nothing that can move the
 * cursor, start a line or hide text is printed as itself: terminal escape
 * sequences are removed whole, and every other control character is shown
 * ({@link visibleControl}), so what was there stays readable.
 */

/**
 * Terminal escape sequences (ECMA-48), matched whole so that no `[31m`
 * debris is left behind:
 * - CSI: `ESC [` (or the 8-bit U+009B) parameters, intermediates, one final byte;
 * - OSC, DCS, SOS, PM, APC: `ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` up to
 *   the string terminator (BEL or `ESC \`); an unterminated one loses only its
 *   introducer, so the text after it stays readable;
 * - any other `ESC` + intermediates + final byte (e.g. `ESC c`, `ESC (B`),
 *   and a lone ESC.
 */
const ANSI_SEQUENCE =
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[\x20-\x2f]*[\x30-\x7e]?/g;

/** {@link ANSI_SEQUENCE} without the lone ESC: what is left of one is shown ({@link visibleControl}). */
const WHOLE_SEQUENCE =
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[\x20-\x2f]*[\x30-\x7e]/g;

/** Removes terminal escape sequences (colours, cursor moves, hyperlinks, titles). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_SEQUENCE, "");
}

/**
 * Characters never printed as themselves: C0 controls but tab, DEL, C1
 * controls (NEL, the 8-bit CSI), the Unicode line and paragraph separators,
 * and the bidirectional overrides and isolates, which reorder what a line
 * shows. Line feed is among them; {@link consoleLines} keeps it.
 */
const SHOWN = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHOWN_BUT_LF = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const MAY_CHANGE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * How a control character is shown: a C0 control or DEL as its Unicode
 * control picture (NUL `␀`, CR `␍`, LF `␊`, ESC `␛`, DEL `␡`), anything
 * else as `\uXXXX` (NEL `\u0085`, U+2028 `\u2028`).
 */
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

/**
 * `text` as lines: as {@link consoleLine}, but a line feed (or CR LF) stays a
 * line break, for the caller to prefix each line; a carriage return alone is
 * shown, never obeyed.
 */
export function consoleLines(text: string): string {
  if (!MAY_CHANGE.test(text)) return text;
  return text.replace(WHOLE_SEQUENCE, "").replace(/\r\n/g, "\n").replace(SHOWN_BUT_LF, visibleControl);
}
