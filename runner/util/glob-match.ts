// One glob dialect, micromatch's (fast-glob's, plan/plan.ts): checks without a walk never disagree with the plan.

interface MatchOptions {
  dot?: boolean;
  strictBrackets?: boolean;
}

/** The part of micromatch used here, typed locally: its types are not a dependency a user's type check can find. */
interface Micromatch {
  isMatch(file: string, glob: string, options: MatchOptions): boolean;
  matcher(glob: string, options: MatchOptions): (file: string) => boolean;
  makeRe(glob: string, options: MatchOptions): RegExp;
}

const micromatch = require("micromatch") as Micromatch;

const OPTIONS: MatchOptions = { dot: false };

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
