/** Names kept as written; control characters Bun's JUnit drops show as pictures (docs/reports.md, "Test names"). */
import { stripAnsi, visibleControl } from "../util/terminal.ts";

export { stripAnsi };

/** The control characters Bun 1.4's JUnit drops from a name (docs/bun-behaviour.md, "Bun's JUnit reporter"). */
const DROPPED_CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f]/g;
const HAS_DROPPED_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f]/;

/** A test name as reports show it: each control character Bun's JUnit would drop becomes its picture (ESC `␛`). */
function cleanName(name: string): string {
  return HAS_DROPPED_CONTROL.test(name) ? name.replace(DROPPED_CONTROLS, visibleControl) : name;
}

/** A test name from an inspector event, as the reports show it. */
export const cleanEventName = cleanName;

/** A test name from Bun's JUnit (no event): Bun 1.4 has already dropped its control characters for good. */
export const cleanJUnitName = cleanName;
