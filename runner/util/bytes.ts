/**
 * ASCII byte values the byte-level readers share (Bun's JUnit cutter and
 * scanner, the marks file, JSON string cutting, inspector frames): one
 * table, so a reader never spells a character code of its own.
 */
export const NUL = 0x00;
export const NEWLINE = 0x0a;
/** `"` */
export const QUOTE = 0x22;
/** `&` */
export const AMP = 0x26;
/** `'` */
export const APOS = 0x27;
/** `/` */
export const SLASH = 0x2f;
/** `;` */
export const SEMI = 0x3b;
/** `<` */
export const LT = 0x3c;
/** `=` */
export const EQUALS = 0x3d;
/** `>` */
export const GT = 0x3e;
/** `\` */
export const BACKSLASH = 0x5c;
/** `}` */
export const CLOSE_BRACE = 0x7d;
