/**
 * Atomic file replacement for report files.
 *
 * CI steps, dashboards and people read reports while a run is still going
 * (and a run can be killed at any moment). Writing in place would let them
 * see a truncated JUnit or JSON file that fails to parse; writing a temp file
 * in the same directory and renaming it over the target means a reader sees
 * either the old complete file or the new complete file, never half of one
 * (rename within one filesystem is atomic on POSIX).
 */
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { randomHex } from "./random.ts";

/**
 * Writes `data` (a string is written as UTF-8) to `path` atomically:
 * creates the parent directories, writes a unique temp file next to the
 * target (`.<name>.<pid>.<random>.tmp`), fsyncs it, then renames it over
 * `path`. On any error the temp file is removed and the error is rethrown;
 * the target is then left as it was.
 *
 * @param mode permission bits for a newly created file (default 0o666,
 *   reduced by the umask).
 * @throws the underlying fs error (e.g. EACCES, ENOSPC, EISDIR).
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
