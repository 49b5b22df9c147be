// Reports are read while a run goes and a run can be killed: a temp file renamed over the target
// means a reader sees the old or the new complete file, never half of one.
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { randomHex } from "./random.ts";

/**
 * Writes `data` (strings as UTF-8) to `path` atomically, parents created; `mode` for a new file (umask applies).
 * @throws the fs error (EACCES, ENOSPC, …), the target left as it was.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o666): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomHex(6)}.tmp`);
  try {
    // "wx": fail rather than share a temp file with another writer.
    const handle = await open(temp, "wx", mode);
    try {
      await handle.writeFile(data);
      // Without fsync a crash after the rename can leave an empty file under the new name.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
