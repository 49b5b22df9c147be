// Shared formatting, so one run never shows the same quantity two ways.
import { consoleLine } from "./terminal.ts";

/** `n word` with an English plural: `1 shard`, `2 shards`, `2 processes`. */
export const plural = (n: number, word: string): string =>
  `${n} ${word}${n === 1 ? "" : /(?:s|x|z|ch|sh)$/.test(word) ? "es" : "s"}`;

/** Milliseconds as seconds with one decimal, for columns and progress: `12.3s`. */
export const secs = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

/** Test-written text on one console line ({@link consoleLine}): a break in it could forge a line of ours. */
export const oneLine = (text: string): string => consoleLine(text);

/** Milliseconds as seconds in a sentence, trailing zeros dropped: `1800 s`, `2.5 s`. */
export const seconds = (ms: number): string => `${+(ms / 1000).toFixed(1)} s`;
