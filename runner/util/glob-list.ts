/**
 * Lists of globs as flags and variables write them. Imports nothing: config/ reads them before any matcher is loaded.
 */

/**
 * Splits a comma-separated list of globs, keeping the commas inside `{…}`
 * (`test/{a,b}.ts` is one glob). Entries are trimmed; empty ones dropped.
 */
export function splitGlobList(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "{") depth++;
    else if (ch === "}" && depth > 0) depth--;
    if (ch === "," && depth === 0) {
      out.push(current);
      current = "";
    } else current += ch;
  }
  out.push(current);
  return out.map((g) => g.trim()).filter((g) => g.length > 0);
}
