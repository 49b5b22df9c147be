/**
 * Text rules the result model applies to what tests write. A test's name is
 * kept as the test wrote it, on every path (Bun's JUnit, inspector events), so
 * two tests whose names differ only in control characters or escape sequences
 * keep different names; the control characters Bun 1.4's JUnit writer drops
 * are shown instead ({@link visibleControl}), so none vanishes silently and
 * every report can carry the name (docs/reports.md). Reporters re-export
 * {@link stripAnsi} for failure texts.
 */
import { stripAnsi, visibleControl } from "../util/terminal.ts";

export { stripAnsi };

/**
 * The control characters Bun 1.4.4's JUnit writer drops from a name
 * (measured: U+0000–U+0008, U+000B, U+000C, U+000E–U+001F, ESC among them;
 * it keeps tab, line feed, carriage return and DEL). Events and Bun 1.3's
 * JUnit carry them; XML 1.0 admits none of them, even as a reference.
 */
const DROPPED_CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f]/g;
const HAS_DROPPED_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f]/;

/**
 * A test name, as the reports show it: each control character Bun's JUnit
 * would drop becomes its control picture (NUL `␀`, ESC `␛`: a colour code
 * reads `␛[31m`), everything else is kept.
 */
function cleanName(name: string): string {
  return HAS_DROPPED_CONTROL.test(name) ? name.replace(DROPPED_CONTROLS, visibleControl) : name;
}

/** A test name from an inspector event, as the reports show it. */
export const cleanEventName = cleanName;

/**
 * A test name from Bun's JUnit (no event to take it from), as the reports
 * show it. Bun 1.4's JUnit has already dropped the control characters (a
 * colour code arrives as `[31m`), and nothing can bring them back.
 */
export const cleanJUnitName = cleanName;
