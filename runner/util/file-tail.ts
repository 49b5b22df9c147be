import { openRegular } from "./regular-file.ts";

/** The last `maxBytes` of `file` as UTF-8, and whether it was cut; "" when unreadable: a lost tail never throws. */
export async function readFileTail(file: string, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  try {
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
