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
import { closeSync, constants, fsync, mkdirSync, openSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { copyFile, link, open, rename, rm } from "node:fs/promises";
import { promisify } from "node:util";
import { basename, dirname, join } from "node:path";

/** Bytes collected per document before one write to its temp file: few system calls, bounded memory. */
export const FLUSH_BYTES = 1024 * 1024;

/**
 * Longest stretch, ms, that writing holds the event loop before letting it
 * turn: the writes are synchronous (a write(2) of a flush to the page cache
 * takes well under a millisecond; the asynchronous stream spent more time in
 * its own machinery than in the system calls, bench/README.md), and an
 * interim write of a large report must not hold back a running shard's
 * pipes, events or wall-clock timeout by its whole render.
 */
export const YIELD_EVERY_MS = 10;

/** One document to write: its text in pieces, and the paths it replaces. */
export interface StreamedDocument {
  /** Paths replaced, in this order (a run's own copy before the stable path). */
  targets: readonly string[];
  /** The document's text (UTF-8 on disk), pulled once. */
  chunks: Iterable<string>;
}

/**
 * Writes the concatenation of `chunks` (as UTF-8) to every path of
 * `targets`, each atomically: {@link writeDocumentsAtomic} with one document.
 *
 * @throws whatever pulling `chunks` throws, or the fs error (EACCES, ENOSPC, EISDIR, …)
 */
export async function writeChunksAtomic(targets: readonly string[], chunks: Iterable<string>, mode = 0o666): Promise<void> {
  await writeDocumentsAtomic([{ targets, chunks }], mode);
}

/** One document while it is written. */
interface Writing {
  doc: StreamedDocument;
  iterator: Iterator<string>;
  temps: string[];
  fd: number;
  /** Encoded bytes not yet written: `bytes[0, used)`. */
  bytes: Buffer;
  used: number;
  done: boolean;
}

const fsyncFd = promisify(fsync);

/**
 * Writes several documents, each to every path of its `targets`
 * atomically: a unique temp file next to each target
 * (`.<name>.<pid>.<random>.tmp`, parent directories created) that is
 * renamed over it once every document is complete, documents in the given
 * order and each one's targets in their order.
 *
 * The documents are rendered side by side, one piece of each in turn (so
 * renderers sharing work per test, such as one schema check for JSON and
 * CTRF, stay in step), and written about {@link FLUSH_BYTES} bytes at
 * a time with write(2) to the first temp file of each. All first temp
 * files are then fsynced together. Every other target's temp file is a
 * hard link to its document's first (one file on disk under several names:
 * the names are only ever replaced by a rename, never written in place), or
 * a copy when a link is impossible (another filesystem), fsynced too.
 *
 * When pulling a piece throws (a report that fails its schema half way) or
 * a write fails, every temp file is removed and the error is rethrown:
 * every target of every document is then left as it was. A failure while
 * renaming leaves the targets renamed before it replaced.
 *
 * The pieces are pulled and written synchronously; the event loop gets a
 * turn (setImmediate) at a flush once {@link YIELD_EVERY_MS} have passed
 * since the last one.
 *
 * @param mode permission bits for a newly created file (default 0o666, reduced by the umask)
 * @returns the time, ms, spent rendering and writing while holding the
 *   event loop (not the fsync and rename waits): what the write cost the run
 * @throws whatever pulling the chunks throws, or the fs error (EACCES, ENOSPC, EISDIR, …)
 */
export async function writeDocumentsAtomic(documents: readonly StreamedDocument[], mode = 0o666): Promise<number> {
  const writing: Writing[] = [];
  const made: string[] = [];
  let busyMs = 0;
  try {
    for (const doc of documents) {
      const temps = doc.targets.map((target) => join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`));
      for (const target of doc.targets) mkdirSync(dirname(target), { recursive: true });
      // "wx": fail rather than share a temp file with another writer.
      const fd = openSync(temps[0]!, "wx", mode);
      made.push(temps[0]!);
      writing.push({ doc, iterator: doc.chunks[Symbol.iterator](), temps, fd, bytes: Buffer.allocUnsafe(FLUSH_BYTES), used: 0, done: false });
    }
    let open = writing.length;
    let since = performance.now();
    while (open > 0) {
      for (const w of writing) {
        if (w.done) continue;
        const next = w.iterator.next();
        if (next.done) {
          w.done = true;
          open -= 1;
          flush(w);
        } else if (append(w, next.value) && performance.now() - since >= YIELD_EVERY_MS) {
          busyMs += performance.now() - since;
          await new Promise((resolve) => setImmediate(resolve));
          since = performance.now();
        }
      }
    }
    busyMs += performance.now() - since;
    // Without fsync a crash after the rename can leave an empty file under the new name.
    await Promise.all(writing.map((w) => fsyncFd(w.fd)));

    for (const w of writing) {
      closeSync(w.fd);
      w.fd = -1;
    }
    for (const w of writing) {
      for (const temp of w.temps.slice(1)) await linkOrCopy(w.temps[0]!, temp, made);
    }
    for (const w of writing) for (let i = 0; i < w.temps.length; i++) await rename(w.temps[i]!, w.doc.targets[i]!);
    return busyMs;
  } catch (error) {
    for (const w of writing) {
      if (w.fd !== -1) {
        try {
          closeSync(w.fd);
        } catch {}
      }
    }
    for (const temp of made) await rm(temp, { force: true });
    throw error;
  }
}

/** `temp` as a hard link to `first`, or a fsynced copy when linking is impossible; recorded in `made` once it exists. */
async function linkOrCopy(first: string, temp: string, made: string[]): Promise<void> {
  try {
    await link(first, temp);
    made.push(temp);
    return;
  } catch {}
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

/**
 * Adds `text` (as UTF-8) to the document's buffer, writing the buffer out
 * first when `text` might not fit (at most 3 bytes per UTF-16 code unit);
 * a text larger than the buffer is written on its own. Encoding each piece
 * straight into the buffer spares joining the pieces into one string first.
 *
 * @returns true when it wrote to the file
 */
function append(w: Writing, text: string): boolean {
  const bytes = w.bytes;
  if (w.used + text.length * 3 <= bytes.length) {
    w.used += bytes.write(text, w.used, "utf8");
    return false;
  }
  flush(w);
  if (text.length * 3 <= bytes.length) w.used = bytes.write(text, 0, "utf8");
  else writeAll(w.fd, Buffer.from(text, "utf8"));
  return true;
}

/** Writes out the document's buffered bytes. */
function flush(w: Writing): void {
  writeAll(w.fd, w.bytes, w.used);
  w.used = 0;
}

/** Writes `bytes[0, length)` at the file's position, all of it (a write may be partial). */
function writeAll(fd: number, bytes: Buffer, length: number = bytes.length): void {
  for (let done = 0; done < length; ) done += writeSync(fd, bytes, done, length - done);
}
