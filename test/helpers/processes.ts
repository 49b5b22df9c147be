/**
 * Process checks shared by the tests that ask whether something survived a kill.
 */
import { readFileSync } from "node:fs";

/**
 * True while `pid` exists and is neither a zombie (Z) nor dead (X): a zombie burns nothing and
 * stays one until its parent (or init, for an orphan) reaps it, so a test asking whether a
 * process survived counts it as gone.
 */
export function alive(pid: number): boolean {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
