/**
 * Matching one path against a glob, in the dialect test discovery uses:
 * micromatch, the matcher inside fast-glob (plan/plan.ts). Whatever decides
 * membership without walking the tree (the preset preload's quick check,
 * diff selection's touchfiles) goes through here, so it can never disagree
 * with the plan about what a glob means.
 */
import micromatch from "micromatch";

/** Options fast-glob passes to its matcher for our discovery calls (dotfiles not matched). */
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

/**
 * Why `glob` is not a valid glob of the plan's dialect (an unclosed `[`, `{`
 * or `(`), or null when it is one. micromatch alone reads such a glob as
 * literal text, so a typo would silently match nothing.
 */
export function globSyntaxError(glob: string): string | null {
  try {
    micromatch.makeRe(glob, { ...OPTIONS, strictBrackets: true });
    return null;
  } catch (error) {
    return String((error as Error).message).split(" - ")[0]!;
  }
}
