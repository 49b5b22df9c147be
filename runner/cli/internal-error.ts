/**
 * What `shardguard` prints when it fails itself: one line and the path of its stack trace, exit 1, so an
 * unfinished run never reads as a pass nor as a refusal (docs/reports.md, "Exit codes").
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { EXIT } from "../results/codes.ts";
import { TOOL_VERSION } from "../util/version.ts";

/**
 * Writes `error`'s stack trace to a new temp file (mode 0600); a trace that cannot be written is named as lost.
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
    const header =
      `shardguard ${TOOL_VERSION}, Bun ${process.versions.bun ?? "?"}, ` +
      `${process.platform}-${process.arch}\nargv: ${JSON.stringify(argv)}\n\n`;
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
