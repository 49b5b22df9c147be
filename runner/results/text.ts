/**
 * Text rules the result model applies to what tests write: terminal escape
 * sequences and the control characters Bun's JUnit drops out of names, on every path (Bun's JUnit, inspector events), so a
 * test has the same name in every report whether its shard ended normally or
 * was killed (docs/reports.md). Reporters re-export {@link stripAnsi} for failure texts.
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

/** Removes terminal escape sequences (colours, cursor moves, hyperlinks, titles). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_SEQUENCE, "");
}

/**
 * What Bun 1.4.4's JUnit writer leaves of a colour code: it drops the ESC byte
 * and keeps the rest (measured: `"\x1b[31mred\x1b[0m"` is written as
 * `"[31mred[0m"`). Only SGR remnants (`[` digits and `;` then `m`) are
 * removed: anything wider would eat real brackets of a name. OSC remnants
 * (`]8;;url` with its BEL dropped) cannot be told from the text around them
 * and stay; with events on, the name comes from the event, which is exact.
 */
const SGR_REMNANT = /\[(?:\d{1,3}(?:;\d{1,3})*)?m/g;

/**
 * The control characters Bun 1.4.4's JUnit writer drops from a name
 * (measured: U+0000–U+0008, U+000B, U+000C, U+000E–U+001F; it keeps tab,
 * line feed, carriage return and DEL). Events carry them, so without this a
 * name would differ between a shard with events and one without.
 */
const DROPPED_CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f]/g;

/**
 * Every character the three patterns above can match or start at: a name
 * with none of them is already clean (nearly every name; one test instead
 * of two or three global replaces per test, 100,000 tests per shard in P8).
 */
const MAY_NEED_CLEANING = /[\x00-\x1f\x9b[]/;

/** A test name from an inspector event, as the reports show it. */
export function cleanEventName(name: string): string {
  if (!MAY_NEED_CLEANING.test(name)) return name;
  return stripAnsi(name).replace(DROPPED_CONTROLS, "");
}

/** A test name from Bun's JUnit (no event to take it from), as the reports show it. */
export function cleanJUnitName(name: string): string {
  if (!MAY_NEED_CLEANING.test(name)) return name;
  return stripAnsi(name).replace(SGR_REMNANT, "").replace(DROPPED_CONTROLS, "");
}
