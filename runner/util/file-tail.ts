/**
 * Reads the end of a file without reading the whole file: logs can be
 * gigabytes, and only their tail is ever shown.
 */
import { open } from "node:fs/promises";

/**
 * The last `maxBytes` bytes of `file` as UTF-8 (a character cut at the start
 * becomes U+FFFD). Resolves "" when the file cannot be read: a lost tail must
 * never turn a verdict into an exception.
 *
 * @returns the text, and whether the file was longer than `maxBytes`
 */
export async function readFileTail(file: string, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  try {
    const handle = await open(file, "r");
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
