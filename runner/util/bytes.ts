/** ASCII byte values the byte-level readers share, so none spells a character code of its own. */
export const NUL = 0x00;
export const NEWLINE = 0x0a;
export const QUOTE = 0x22;
export const AMP = 0x26;
export const APOS = 0x27;
export const SLASH = 0x2f;
export const SEMI = 0x3b;
export const LT = 0x3c;
export const EQUALS = 0x3d;
export const GT = 0x3e;
export const BACKSLASH = 0x5c;
export const CLOSE_BRACE = 0x7d;

/** True when `bytes` holds `pattern` at `at`. */
export function hasAt(bytes: Uint8Array, at: number, pattern: Uint8Array): boolean {
  if (at + pattern.length > bytes.length) return false;
  for (let i = 0; i < pattern.length; i++) if (bytes[at + i] !== pattern[i]) return false;
  return true;
}

/** The end of a JSON integer of 1 to 15 digits at `at` (a safe integer for JSON.parse), or -1. */
export function integerEnd(bytes: Uint8Array, at: number): number {
  let end = at;
  while (end < bytes.length && end - at <= 15 && bytes[end]! >= 0x30 && bytes[end]! <= 0x39) end += 1;
  const length = end - at;
  if (length === 0 || length > 15 || (length > 1 && bytes[at] === 0x30)) return -1;
  return end;
}

/** The value of the decimal digits in `bytes[from, to)` (checked by {@link integerEnd}). */
export function integerAt(bytes: Uint8Array, from: number, to: number): number {
  let value = 0;
  for (let i = from; i < to; i++) value = value * 10 + (bytes[i]! - 0x30);
  return value;
}
