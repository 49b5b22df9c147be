/**
 * What `import script from "./html-page.client.js" with { type: "text" }` gives: the file's
 * text (report/html-page.ts). The file itself is a classic browser script and exports nothing.
 */
declare const text: string;
export default text;
