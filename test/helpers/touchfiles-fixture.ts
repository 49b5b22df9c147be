/**
 * The touchfiles data the diff-selection tests share: two tests with their
 * globs, one global glob, and a third name known only from another table.
 */
import type { Touchfiles } from "../../runner/presets/diff.ts";

/** A fresh copy each call: tests may change it. */
export function sampleTouchfiles(): Touchfiles {
  return {
    map: { "alpha-basic": ["src/alpha/**"], "beta-flow": ["src/beta.ts", "test/skill-e2e-built.test.ts"] },
    global: ["package.json"],
    names: ["alpha-basic", "beta-flow", "gamma-tier-only"],
    file: "test/helpers/touchfiles.ts",
    tables: {},
    sources: ["test/helpers/touchfiles.ts"],
  };
}
