/**
 * Reads the end of a file without reading the whole file: logs can be
 * gigabytes, and only their tail is ever shown.
 */
import { openRegular } from "./regular-file.ts";

/**
 * The last `maxBytes` bytes of `file` as UTF-8 (a character cut at the start
 * becomes U+FFFD). Resolves "" when the file cannot be read or is not a
 * regular file (never waits on a FIFO): a lost tail must never turn a
 * verdict into an exception, nor hold up the run.
 *
 * @returns the text, and whether the file was longer than `maxBytes`
 */
export async function readFileTail(file: string, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  try {
    // Non-blocking and regular only: a test may have put a FIFO at its own log's path.
    const handle = await openRegular(file);
    try {
      const { size } = await handle.stat();
      const start = Math.max(0, size - maxBytes);
      const buffer = Buffer.alloc(size - start);
      await handle.read(buffer, 0, buffer.length, start);
      return { text: buffer.toString("utf8"), cut: start > 0 };
    } finally {
      await handle.close();
    }
  } catch {
    return { text: "", cut: false };
  }
}
