// One glob dialect, micromatch's (fast-glob's, plan/plan.ts): checks without a walk never disagree with the plan.
import micromatch from "micromatch";

const OPTIONS: micromatch.Options = { dot: false };

/** True when root-relative `file` (forward slashes) matches `glob`, or equals it. */
export function matchesGlob(file: string, glob: string): boolean {
  return file === glob || micromatch.isMatch(file, glob, OPTIONS);
}

/** A reusable matcher for several files against one set of globs: true when any glob matches. */
export function globMatcher(globs: readonly string[]): (file: string) => boolean {
  const test = micromatch.matcher(globs.length === 1 ? globs[0]! : `{${globs.join(",")}}`, OPTIONS);
  const exact = new Set(globs);
  return (file) => exact.has(file) || test(file);
}

/** Why `glob` is invalid (an unclosed bracket), or null: micromatch reads one as literal text, matching nothing. */
export function globSyntaxError(glob: string): string | null {
  try {
    micromatch.makeRe(glob, { ...OPTIONS, strictBrackets: true });
    return null;
  } catch (error) {
    return String((error as Error).message).split(" - ")[0]!;
  }
}
