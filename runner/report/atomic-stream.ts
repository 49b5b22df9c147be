/**
 * Atomic replacement of report files whose text is streamed: the pieces of
 * a document are written as they are rendered to a temp file next to each
 * target, which is fsynced and renamed over the target only once the whole
 * document is on disk. A reader sees the old complete file or the new
 * complete file, never half of one (as with util/atomic.ts's
 * writeFileAtomic, whose rules these are), and the document is never held
 * as one string: 100,000 testcases are ~15-30 MB of text per format, and
 * holding them set the runner's peak memory (bench/README.md).
 */
import { constants } from "node:fs";
import { randomBytes } from "node:crypto";
import { copyFile, link, mkdir, open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Characters collected before one write to the temp files: few system calls, bounded memory. */
export const FLUSH_CHARS = 256 * 1024;

/**
 * Writes the concatenation of `chunks` (as UTF-8) to every path of
 * `targets`, each atomically: a unique temp file next to it
 * (`.<name>.<pid>.<random>.tmp`, parent directories created) that is
 * renamed over it once complete, in the order of `targets` (so a run's own
 * copy can land before the stable path).
 *
 * The chunks are pulled once and written, about {@link FLUSH_CHARS}
 * characters at a time, to the first temp file, which is fsynced. Every
 * other target's temp file is a hard link to it (one file on disk under
 * several names: the names are only ever replaced by a rename, never
 * written in place), or a copy when a link is impossible (another
 * filesystem), fsynced too.
 *
 * When pulling a chunk throws (a report that fails its schema half way) or
 * a write fails, every temp file is removed and the error is rethrown:
 * every target is then left as it was. A failure while renaming leaves the
 * targets renamed before it replaced.
 *
 * @param mode permission bits for a newly created file (default 0o666, reduced by the umask)
 * @throws whatever pulling `chunks` throws, or the fs error (EACCES, ENOSPC, EISDIR, …)
 */
export async function writeChunksAtomic(targets: readonly string[], chunks: Iterable<string>, mode = 0o666): Promise<void> {
  const temps = targets.map((target) => join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`));
  const made: string[] = [];
  let handle: FileHandle | null = null;
  try {
    for (const target of targets) await mkdir(dirname(target), { recursive: true });
    const first = temps[0]!;
    // "wx": fail rather than share a temp file with another writer.
    handle = await open(first, "wx", mode);
    made.push(first);
    const buffer = { bytes: Buffer.allocUnsafe(0) };
    let pending = "";
    for (const chunk of chunks) {
      pending += chunk;
      if (pending.length >= FLUSH_CHARS) {
        await writeAll(handle, pending, buffer);
        pending = "";
        // Rendering leaves short-lived garbage (a checked copy, a cleaned copy
        // and the text of every entry) that Bun's collector let pile up to
        // ~100 MiB per report of 100,000 tests before collecting; a young-
        // generation collection per flush keeps it to a few MiB at no
        // measurable cost (bench/README.md).
        Bun.gc(false);
      }
    }
    if (pending !== "") await writeAll(handle, pending, buffer);
    // Without fsync a crash after the rename can leave an empty file under the new name.
    await handle.sync();
    await handle.close();
    handle = null;
    for (const temp of temps.slice(1)) {
      try {
        await link(first, temp);
        made.push(temp);
      } catch {
        try {
          await copyFile(first, temp, constants.COPYFILE_EXCL);
        } catch (error) {
          // A copy cut short (ENOSPC) leaves a partial temp file: not ours to
          // keep when it is not there because another writer holds the name.
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") await rm(temp, { force: true });
          throw error;
        }
        made.push(temp);
        const copy = await open(temp, "r+");
        try {
          await copy.sync();
        } finally {
          await copy.close();
        }
      }
    }
    for (let i = 0; i < targets.length; i++) await rename(temps[i]!, targets[i]!);
  } catch (error) {
    await handle?.close().catch(() => {});
    for (const temp of made) await rm(temp, { force: true });
    throw error;
  }
}

/**
 * Writes `text` as UTF-8 at the file's position, all of it (a write may be
 * partial), encoded into `buffer.bytes`, which is reused across the writes
 * of one document (a fresh Buffer per flush is memory outside the
 * JavaScript heap, returned only once the collector finalizes it) and
 * grown when `text` might not fit.
 */
async function writeAll(handle: FileHandle, text: string, buffer: { bytes: Buffer }): Promise<void> {
  // At most 3 bytes of UTF-8 per UTF-16 code unit.
  if (buffer.bytes.length < text.length * 3) buffer.bytes = Buffer.allocUnsafe(text.length * 3);
  const bytes = buffer.bytes;
  const length = bytes.write(text, 0, "utf8");
  for (let done = 0; done < length; ) {
    const { bytesWritten } = await handle.write(bytes, done, length - done);
    done += bytesWritten;
  }
}
