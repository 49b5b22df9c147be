/**
 * Files the runner holds open while a test may delete them (a test that runs
 * `rm -rf .shardguard`): an unlinked file stays readable through a
 * descriptor, so what was written to it is not lost, and on Linux it can be
 * copied back under its name through `/proc/self/fd` (a file with no name
 * left cannot be linked again).
 */
import { copyFileSync, fstatSync, mkdirSync } from "node:fs";
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
 *
 * @throws the file system's error; an Error off Linux (no /proc to reopen the file by)
 */
export function restoreUnlinked(fd: number, file: string): void {
  if (process.platform !== "linux") throw new Error("a deleted file can be copied back only on Linux");
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  copyFileSync(`/proc/self/fd/${fd}`, file);
}
