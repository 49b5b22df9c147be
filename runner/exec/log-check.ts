/**
 * After a shard's child exited: did its log take every byte it was given?
 * Judged from the file and its file system, never from the log's text.
 */
import { closeSync, fstatSync, readFileSync, statfsSync, statSync } from "node:fs";
import path from "node:path";
import { openAppendRegularSync } from "../util/regular-file.ts";
import { isUnlinked, restoreUnlinked } from "../util/unlinked.ts";

/**
 * A shard's log as the runner opened it for the child's stdout and stderr:
 * the runner keeps its descriptor until the child ends (it never reads
 * through it), so a log deleted under the run (a test that removed OUT)
 * can be put back whole.
 */
export interface ShardLog {
  /** Null when the log could not be opened (the output then goes to /dev/null). */
  fd: number | null;
  /** The log's size when opened, bytes (a retried shard appends to its log). */
  sizeAtOpen: number;
  /** Why it could not be opened. */
  error: string | null;
}

/**
 * Opens the shard's log for appending, mode 0600; never blocks (a test may
 * have put a FIFO at a later shard's log path).
 */
export function openShardLog(logPath: string): ShardLog {
  try {
    const fd = openAppendRegularSync(logPath, 0o600);
    return { fd, sizeAtOpen: fstatSync(fd).size, error: null };
  } catch (error) {
    return { fd: null, sizeAtOpen: 0, error: (error as Error).message };
  }
}

/** Closes the runner's descriptor of the log, once. */
export function closeShardLog(log: ShardLog): void {
  if (log.fd !== null) closeSync(log.fd);
  log.fd = null;
}

const DELETED_LOG = "the shard's log was deleted while it ran (a test removed the output directory?)";

/**
 * After the child ended: the log put back if it was deleted while the
 * shard ran (with a note saying so), the runner's descriptor closed, and
 * {@link logProblem}'s judgement of it.
 */
export function settleShardLog(
  logPath: string,
  log: ShardLog,
  signal: NodeJS.Signals | null,
): { bytes: number; problem: string | null; note: string | null } {
  if (log.error !== null) return { bytes: 0, problem: log.error, note: null };
  let note: string | null = null;
  let problem: string | null = null;
  if (log.fd !== null && isUnlinked(log.fd)) {
    try {
      restoreUnlinked(log.fd, logPath);
      note = `${DELETED_LOG}: put back whole from the runner's descriptor`;
    } catch (error) {
      problem = note = `${DELETED_LOG} and could not be put back (${(error as Error).message}): its output is lost`;
    }
  }
  closeShardLog(log);
  return problem !== null ? { bytes: 0, problem, note } : { ...logProblem(logPath, log.sizeAtOpen, signal), note };
}

/**
 * How much a shard's log grew, and whether it may miss output, judged by the
 * runner after the child ended (it never sees the output itself).
 *
 * A child whose stdout is a file sees a write error itself: on a full disk
 * (ENOSPC) or past the file size limit (EFBIG, or SIGXFSZ for a process that
 * does not ignore it) Bun's console output is dropped silently, and a test's
 * own `process.stdout.write` fails (Bun 1.4.4 fails that test with the
 * ENOSPC error, as it would under `bun test > file`). What the runner can
 * tell afterwards: the child died of SIGXFSZ; the log reached the soft
 * RLIMIT_FSIZE, which the child inherited from the runner; the log's file
 * system has no block left for the writer (`bavail`, or `bfree` for root,
 * who may use the reserved blocks). What it cannot: a disk that was full
 * for a moment and had room again by the end, an I/O error (EIO), a log
 * that is not a regular file (/dev/full).
 *
 * @param sizeAtOpen the log's size in bytes when it was opened
 * @returns the bytes added, and a one-line problem or null
 */
export function logProblem(
  logPath: string,
  sizeAtOpen: number,
  signal: NodeJS.Signals | null,
): { bytes: number; problem: string | null } {
  let size: number;
  try {
    size = statSync(logPath).size;
  } catch (error) {
    return { bytes: 0, problem: `the log is gone: ${(error as Error).message}` };
  }
  const bytes = Math.max(0, size - sizeAtOpen);
  const limit = fileSizeLimit();
  if (signal === "SIGXFSZ" || (limit !== null && size >= limit)) {
    return {
      bytes,
      problem: `EFBIG: the log reached the file size limit (RLIMIT_FSIZE${limit !== null ? ` ${limit} bytes` : ""}); output past it is lost`,
    };
  }
  try {
    const fs = statfsSync(path.dirname(logPath));
    const free = process.getuid?.() === 0 ? fs.bfree : fs.bavail;
    // A file system that reports no blocks at all (some FUSE mounts) tells nothing.
    if (fs.blocks > 0 && free === 0)
      return {
        bytes,
        problem: "ENOSPC: no space left on the log's file system when the shard ended; output may be lost",
      };
  } catch {
    // No file system figures (unsupported platform): nothing to judge by.
  }
  return { bytes, problem: null };
}

let fsizeLimit: number | null | undefined;

/** The soft RLIMIT_FSIZE of this process in bytes (children inherit it); null when unlimited or unknown (no /proc). */
function fileSizeLimit(): number | null {
  if (fsizeLimit !== undefined) return fsizeLimit;
  fsizeLimit = null;
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max file size"));
    const soft = line?.slice("Max file size".length).trim().split(/\s+/)[0];
    if (soft !== undefined && /^\d+$/.test(soft)) fsizeLimit = Number(soft);
  } catch {
    // Not Linux.
  }
  return fsizeLimit;
}
