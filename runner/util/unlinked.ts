/**
 * Files the runner holds open while a test may delete them (a test that runs
 * `rm -rf .shardguard`): an unlinked file stays readable through a
 * descriptor, so what was written to it is not lost, and on Linux it can be
 * copied back under its name through `/proc/self/fd` (a file with no name
 * left cannot be linked again).
 */
import { constants, copyFileSync, fstatSync, lstatSync, mkdirSync, renameSync, rmSync } from "node:fs";
import path from "node:path";

/** True when the file open at `fd` has no name left (deleted while open); false when unknown. */
export function isUnlinked(fd: number): boolean {
  try {
    return fstatSync(fd).nlink === 0;
  } catch {
    return false;
  }
}

/**
 * Copies the file open at `fd` to `file`, its directory made again (mode
 * 0700): the content of a file deleted while open, put back under its name.
 * Never replaces what is at `file` now (a test may have put a FIFO there,
 * whose open would wait for good): the copy goes to a new temp file next to
 * it, renamed into place.
 *
 * @throws the file system's error; an Error when something is at `file`, or off Linux (no /proc to reopen the file by)
 */
export function restoreUnlinked(fd: number, file: string): void {
  if (process.platform !== "linux") throw new Error("a deleted file can be copied back only on Linux");
  if (lexists(file)) throw new Error("another file is at its path now");
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.restore.tmp`;
  try {
    copyFileSync(`/proc/self/fd/${fd}`, temp, constants.COPYFILE_EXCL);
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

function lexists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}
