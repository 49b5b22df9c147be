/**
 * Formatting shared by console lines, reasons and summaries, so one run never
 * shows the same quantity two ways.
 */
import { consoleLine } from "./terminal.ts";

/** `n word` with an English plural: `1 shard`, `2 shards`, `2 processes`. */
export const plural = (n: number, word: string): string =>
  `${n} ${word}${n === 1 ? "" : /(?:s|x|z|ch|sh)$/.test(word) ? "es" : "s"}`;

/** Milliseconds as seconds with one decimal, for columns and progress: `12.3s`. */
export const secs = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

/**
 * Text on one console line (util/terminal.ts `consoleLine`): escape sequences
 * removed, every line break (CR, LF, NEL, U+2028, U+2029) and other control
 * character shown as a visible character. Test names, file names and command
 * lines come from the tests; with a break in them a console line would start
 * a line of its own, such as a forged `### shardguard EXIT=0 ###` in a
 * background run's log (commands/bg/record.ts), and a carriage return would
 * overwrite the start of the line.
 */
export const oneLine = (text: string): string => consoleLine(text);

/** Milliseconds as seconds in a sentence, trailing zeros dropped: `1800 s`, `2.5 s`. */
export const seconds = (ms: number): string => `${+(ms / 1000).toFixed(1)} s`;
