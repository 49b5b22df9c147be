/** After a shard's child exited: did its log take every byte? Judged from the file and its file system only. */
import { closeSync, fstatSync, readFileSync, statfsSync, statSync, writeSync } from "node:fs";
import path from "node:path";
import { openAppendRegularSync } from "../util/regular-file.ts";
import { isUnlinked, restoreUnlinked } from "../util/unlinked.ts";

/** A shard's log as opened for the child; its descriptor is kept so a log deleted under the run can be put back. */
export interface ShardLog {
  /** Null when the log could not be opened (the output then goes to /dev/null). */
  fd: number | null;
  /** The log's size when opened, bytes (a retried shard appends to its log). */
  sizeAtOpen: number;
  error: string | null;
}

/**
 * Opens the shard's log for appending, mode 0600; never blocks (a test may have put a FIFO there). `header`: a line
 * the runner writes first (a batch's file list); a failed write of it (disk full) costs the run nothing.
 */
export function openShardLog(logPath: string, header?: string): ShardLog {
  try {
    const fd = openAppendRegularSync(logPath, 0o600);
    const sizeAtOpen = fstatSync(fd).size;
    if (header) writeHeader(fd, header);
    return { fd, sizeAtOpen, error: null };
  } catch (error) {
    return { fd: null, sizeAtOpen: 0, error: (error as Error).message };
  }
}

function writeHeader(fd: number, line: string): void {
  try {
    writeSync(fd, `${line}\n`);
  } catch {
    // The reports hold the same list.
  }
}

/** Closes the runner's descriptor of the log, once. */
export function closeShardLog(log: ShardLog): void {
  if (log.fd !== null) closeSync(log.fd);
  log.fd = null;
}

const DELETED_LOG = "the shard's log was deleted while it ran (a test removed the output directory?)";

/** After the child ended: puts a deleted log back (with a note), closes it, and judges it ({@link logProblem}). */
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
 * Bytes the log grew by since `sizeAtOpen`, and a one-line problem or null. Bun drops output silently on
 * ENOSPC or EFBIG, so the runner judges afterwards: death by SIGXFSZ, the log at the soft RLIMIT_FSIZE, or
 * no free block left. A disk full only for a moment, EIO or a non-regular log go unseen.
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
      problem:
        `EFBIG: the log reached the file size limit (RLIMIT_FSIZE${limit !== null ? ` ${limit} bytes` : ""}); ` +
        `output past it is lost`,
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

/** The soft RLIMIT_FSIZE of this process in bytes (children inherit it); null when unlimited or unknown. */
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
