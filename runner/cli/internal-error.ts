/**
 * What the `shardguard` command prints when shardguard itself fails (a bug,
 * not the user's input): one line with the error's message and the path of
 * a file holding its stack trace, never the trace of the compiled CLI
 * (minified code means nothing to a user). The exit code is
 * {@link EXIT.failed} (docs/reports.md, "Exit codes"): an unfinished run
 * must never read as a pass, nor as a refusal that started nothing.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { EXIT } from "../results/codes.ts";
import { TOOL_VERSION } from "../util/version.ts";

/**
 * Writes `error`'s stack trace to a new file under the system temp
 * directory (mode 0600) and returns the one line to print, and the exit code.
 * A trace that cannot be written is named as lost, never thrown.
 *
 * @param error anything thrown or rejected
 * @param argv the command line (without the executable and script), recorded with the trace
 * @returns `{ line, code }`: the line for stderr (no newline), code 1
 */
export function internalError(
  error: unknown,
  argv: readonly string[],
  tmp = os.tmpdir(),
): { line: string; code: number } {
  const message = error instanceof Error ? error.message : String(error);
  const trace = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  let where: string;
  try {
    const dir = mkdtempSync(path.join(tmp, "shardguard-error-"));
    where = path.join(dir, "trace.txt");
    const header = `shardguard ${TOOL_VERSION}, Bun ${process.versions.bun ?? "?"}, ${process.platform}-${process.arch}\nargv: ${JSON.stringify(argv)}\n\n`;
    writeFileSync(where, `${header + trace}\n`, { mode: 0o600 });
  } catch {
    where = "(could not be written)";
  }
  const first = message.split("\n")[0]?.slice(0, 300) ?? "";
  return {
    line: `shardguard: internal error: ${first} (a bug in shardguard; stack trace: ${where})`,
    code: EXIT.failed,
  };
}
