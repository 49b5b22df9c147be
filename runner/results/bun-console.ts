/** Bun's console text only ever fills a load error's message (no event is sent for it), never a verdict. */
import { stripAnsi } from "./text.ts";

/** Bun frames errors outside tests between these lines (Bun 1.4.4 console reporter). */
const UNHANDLED_HEADER = "# Unhandled error between tests";

/** The first "error: …" line (capped) of the last "Unhandled error between tests" block; undefined when none. */
export function unhandledErrorMessage(consoleText: string): string | undefined {
  const text = stripAnsi(consoleText);
  const block = text.slice(text.lastIndexOf(UNHANDLED_HEADER));
  if (!block.startsWith(UNHANDLED_HEADER)) return undefined;
  const line = block.split("\n").find((l) => l.startsWith("error: "));
  return line?.slice("error: ".length, 500 + "error: ".length).trim() || undefined;
}
