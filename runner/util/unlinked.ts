// Files the runner holds open while a test may delete them: readable through the descriptor, and on Linux
// copied back by name through /proc/self/fd.
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
 * Puts the file open at `fd` back at `file` via a temp file, never replacing what is there (maybe a FIFO).
 * @throws the file system's error; an Error when something is at `file`, or off Linux
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
