/**
 * The style sheet and script of report.html (report/html.ts), each a file of its own beside
 * this one: html-page.css, and html-page.client.js, a classic browser script type-checked on
 * its own (tsconfig.page.json: the DOM's types stay out of the Bun program). Both are imported
 * as text (Bun's `with { type: "text" }`), so `bun build` inlines them into the compiled CLI.
 * Neither text may contain a closing style or script tag.
 */
// Typed by html-page.client.d.ts. The style sheet has no such file: a `.d.css.ts` needs
// allowArbitraryExtensions in every program that reads these sources, a user's included.
import script from "./html-page.client.js" with { type: "text" };
// @ts-expect-error TS2307: TypeScript has no type for a .css file; Bun's text import gives its text.
import css from "./html-page.css" with { type: "text" };

/** The page's style sheet. */
export const PAGE_CSS: string = css;

/** The page's script. */
export const PAGE_SCRIPT: string = script;
