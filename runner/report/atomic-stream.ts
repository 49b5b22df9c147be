/**
 * Atomic replacement of report files whose text is streamed: pieces go to a temp file beside each target, fsynced
 * and renamed over it once whole (util/atomic.ts's rules), so a reader never sees half a file and the document is
 * never held as one string (bench/README.md, "Where the time goes").
 */
import { closeSync, constants, fsync, linkSync, mkdirSync, openSync, renameSync, write } from "node:fs";
import { copyFile, open, rm } from "node:fs/promises";
import { promisify } from "node:util";
import { basename, dirname, join } from "node:path";
import { randomHex } from "../util/random.ts";

/** Bytes collected per document before one write to its temp file: few system calls, bounded memory. */
export const FLUSH_BYTES = 1024 * 1024;

/** A document's first buffer: most writes are small interim reports; one that outgrows it goes on in FLUSH_BYTES. */
const FIRST_BUFFER_BYTES = 64 * 1024;

/** Longest stretch (ms) rendering holds the event loop, so a large interim write cannot delay a shard's timeout. */
export const YIELD_EVERY_MS = 10;

/** One document to write: its text in pieces, and the paths it replaces. */
export interface StreamedDocument {
  /** Paths replaced, in this order (a run's own copy before the stable path). */
  targets: readonly string[];
  /** The document's text (UTF-8 on disk), pulled once. */
  chunks: Iterable<string>;
}

/** {@link writeDocumentsAtomic} with one document.
 * @throws whatever pulling `chunks` throws, or the fs error (EACCES, ENOSPC, EISDIR, …) */
export async function writeChunksAtomic(
  targets: readonly string[],
  chunks: Iterable<string>,
  mode = 0o666,
): Promise<void> {
  await writeDocumentsAtomic([{ targets, chunks }], mode);
}

/** One document while it is written. */
interface Writing {
  doc: StreamedDocument;
  iterator: Iterator<string>;
  temps: string[];
  fd: number;
  /** Bytes being filled: `bytes[0, used)`. */
  bytes: Buffer;
  used: number;
  /** The other buffer, free once `writing` settles; null until the first flush. */
  spare: Buffer | null;
  /** The file's writes so far, in order (one at a time per file); rejects with the first write error. */
  writing: Promise<void>;
  /** Bytes handed to writes since the last early fsync was started (see {@link EARLY_SYNC_BYTES}). */
  unsynced: number;
  /** The early fsyncs started so far (settled before the final one). */
  syncing: Promise<void>[];
  done: boolean;
}

/** Bytes after which an fsync starts while rendering goes on: the final, awaited fsync then has little left to do. */
const EARLY_SYNC_BYTES = 4 * 1024 * 1024;

const fsyncFd = promisify(fsync);
const writeFd = promisify(write);

/**
 * Writes each document atomically to every path of its `targets` (temp files `.<name>.<pid>.<random>.tmp`, parent
 * directories created), renamed in order once every document is complete. Documents render side by side, a piece
 * of each in turn (renderers sharing per-test work stay in step), double-buffered so the disk overlaps rendering.
 * The first temp files are fsynced together; other targets' are hard links to them (fsynced copies across
 * filesystems). On a failure every temp file is removed and the targets stay as they were.
 * @param mode permission bits for a new file (default 0o666, less the umask)
 * @returns ms spent rendering while holding the event loop (not the disk waits): what the write cost the run
 * @throws whatever pulling the chunks throws, or the fs error (EACCES, ENOSPC, EISDIR, …)
 */
export async function writeDocumentsAtomic(documents: readonly StreamedDocument[], mode = 0o666): Promise<number> {
  const writing: Writing[] = [];
  const made: string[] = [];
  try {
    for (const doc of documents) writing.push(openDocument(doc, mode, made));
    const busyMs = await renderDocuments(writing);
    await syncAndClose(writing);
    for (const w of writing) {
      for (const temp of w.temps.slice(1)) await linkOrCopy(w.temps[0]!, temp, made);
    }
    // Synchronous: metadata calls through the thread pool, one after another, delay a busy run's end (bench/README.md).
    for (const w of writing) for (let i = 0; i < w.temps.length; i++) renameSync(w.temps[i]!, w.doc.targets[i]!);
    return busyMs;
  } catch (error) {
    await discard(writing, made);
    throw error;
  }
}

/**
 * Names the document's temp files, makes its targets' directories, creates its first temp file (recorded in `made`).
 */
function openDocument(doc: StreamedDocument, mode: number, made: string[]): Writing {
  const temps = doc.targets.map((target) =>
    join(dirname(target), `.${basename(target)}.${process.pid}.${randomHex(6)}.tmp`),
  );
  for (const target of doc.targets) mkdirSync(dirname(target), { recursive: true });
  // "wx": fail rather than share a temp file with another writer.
  const fd = openSync(temps[0]!, "wx", mode);
  made.push(temps[0]!);
  return {
    doc,
    iterator: doc.chunks[Symbol.iterator](),
    temps,
    fd,
    bytes: Buffer.allocUnsafe(FIRST_BUFFER_BYTES),
    used: 0,
    spare: null,
    writing: Promise.resolve(),
    unsynced: 0,
    syncing: [],
    done: false,
  };
}

/** Pulls the documents' pieces, one of each in turn, into their buffers and flushes them; returns ms busy. */
async function renderDocuments(writing: Writing[]): Promise<number> {
  let busyMs = 0;
  let open = writing.length;
  // Since the event loop's last turn, and since the last wait for the disk.
  let turned = performance.now();
  let since = turned;
  const flushing = async (w: Writing, extra: Buffer | null) => {
    busyMs += performance.now() - since;
    await flush(w, extra);
    since = performance.now();
    if (since - turned >= YIELD_EVERY_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      turned = since = performance.now();
    }
  };
  while (open > 0) {
    for (const w of writing) {
      if (w.done) continue;
      const next = w.iterator.next();
      if (next.done) {
        w.done = true;
        open -= 1;
        if (w.used > 0) await flushing(w, null);
        continue;
      }
      const text = next.value;
      // At most 3 bytes of UTF-8 per UTF-16 code unit.
      const most = text.length * 3;
      if (w.used + most <= w.bytes.length) w.used += w.bytes.write(text, w.used, "utf8");
      // A piece larger than a full-size buffer is written on its own, after the buffer.
      else if (most > FLUSH_BYTES) await flushing(w, Buffer.from(text, "utf8"));
      else {
        await flushing(w, null);
        w.used += w.bytes.write(text, w.used, "utf8");
      }
    }
  }
  busyMs += performance.now() - since;
  return busyMs;
}

/** Waits for every document's writes and early fsyncs, fsyncs the files together, then closes them. */
async function syncAndClose(writing: Writing[]): Promise<void> {
  for (const w of writing) await w.writing;
  {
    const early = await Promise.allSettled(writing.flatMap((w) => w.syncing));
    for (const result of early) if (result.status === "rejected") throw result.reason;
  }
  // Without fsync a crash after the rename can leave an empty file under the new name.
  // All settled before any file is closed (discard closes them).
  const synced = await Promise.allSettled(writing.map((w) => fsyncFd(w.fd)));
  for (const result of synced) if (result.status === "rejected") throw result.reason;
  for (const w of writing) {
    closeSync(w.fd);
    w.fd = -1;
  }
}

/** After a failure: closes every file still open, once nothing is in flight on it, and removes every temp file made. */
async function discard(writing: Writing[], made: string[]): Promise<void> {
  for (const w of writing) {
    // Never close a file under a write or fsync still in flight.
    await w.writing.catch(() => {});
    await Promise.allSettled(w.syncing);
    if (w.fd !== -1) {
      try {
        closeSync(w.fd);
      } catch {}
    }
  }
  for (const temp of made) await rm(temp, { force: true });
}

/**
 * `temp` as a hard link to `first`, or a fsynced copy when linking is impossible; recorded in `made` once it exists.
 */
async function linkOrCopy(first: string, temp: string, made: string[]): Promise<void> {
  try {
    linkSync(first, temp);
    made.push(temp);
    return;
  } catch {}
  try {
    await copyFile(first, temp, constants.COPYFILE_EXCL);
  } catch (error) {
    // A copy cut short leaves a partial temp file, ours to remove unless another writer holds the name (EEXIST).
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

/** Starts writing the filled buffer (then `extra`, a piece too large for one) after the file's earlier writes,
 * and swaps in the spare buffer. @throws the error of an earlier write of this file */
async function flush(w: Writing, extra: Buffer | null = null): Promise<void> {
  // The spare buffer is the one the previous write used.
  await w.writing;
  const bytes = w.bytes;
  const length = w.used;
  w.unsynced += length + (extra?.length ?? 0);
  const syncAfter = w.unsynced >= EARLY_SYNC_BYTES;
  if (syncAfter) w.unsynced = 0;
  w.writing = (async () => {
    await writeAll(w.fd, bytes, length);
    if (extra !== null) await writeAll(w.fd, extra, extra.length);
    // Not awaited by the next write: the disk catches up while rendering goes on.
    if (syncAfter) {
      const sync = fsyncFd(w.fd);
      sync.catch(() => {});
      w.syncing.push(sync);
    }
  })();
  // Marked as handled here; whoever awaits it next still sees the rejection.
  w.writing.catch(() => {});
  w.bytes = w.spare ?? Buffer.allocUnsafe(FLUSH_BYTES);
  // The small first buffer is not reused.
  w.spare = bytes.length === FLUSH_BYTES ? bytes : null;
  w.used = 0;
}

/** Writes `bytes[0, length)` at the file's position, all of it (a write may be partial). */
async function writeAll(fd: number, bytes: Buffer, length: number): Promise<void> {
  for (let done = 0; done < length; ) done += (await writeFd(fd, bytes, done, length - done)).bytesWritten;
}
