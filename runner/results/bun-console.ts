/**
 * The one thing read from Bun's console text: the message of an error Bun
 * reports between tests (a file that fails to load sends no inspector
 * event for it). It only ever fills in a failure's message; a verdict never
 * comes from console text, which a test can print itself.
 */
import { stripAnsi } from "./text.ts";

/** Bun frames errors outside tests between these lines (Bun 1.4.4 console reporter). */
const UNHANDLED_HEADER = "# Unhandled error between tests";

/**
 * The first "error: …" line (at most 500 characters) of the last "Unhandled
 * error between tests" block of `consoleText`; undefined when there is none.
 */
export function unhandledErrorMessage(consoleText: string): string | undefined {
  const text = stripAnsi(consoleText);
  const block = text.slice(text.lastIndexOf(UNHANDLED_HEADER));
  if (!block.startsWith(UNHANDLED_HEADER)) return undefined;
  const line = block.split("\n").find((l) => l.startsWith("error: "));
  return line?.slice("error: ".length, 500 + "error: ".length).trim() || undefined;
}
