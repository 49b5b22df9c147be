/**
 * argv of `shardguard merge DIR... [--out DIR] [--update-timings FILE]`.
 */
import path from "node:path";
import { DEFAULT_MERGE_OUT, type MergeCommandInputs } from "../commands/merge-command.ts";
import type { Host } from "../engine/host.ts";
import { readArgv } from "../config/args.ts";
import { ConfigError } from "../config/settings-schema.ts";

/**
 * Parses merge's argv; paths are resolved against the host's working directory.
 *
 * @returns null when --help was asked
 * @throws ConfigError for an unknown or repeated flag, a missing value, or no DIR
 */
export function parseMergeArgs(argv: readonly string[], host: Pick<Host, "cwd">): MergeCommandInputs | null {
  const sources: string[] = [];
  const values = new Map<string, string>();
  const unknown = (flag: string) =>
    new ConfigError(`unknown flag ${flag} for shardguard merge; accepted: --out DIR, --update-timings FILE`);
  for (const token of readArgv(argv, ["--out", "--update-timings"], ["--help"])) {
    if (token.kind === "end") throw unknown("--");
    if (token.kind === "positional") {
      if (token.value === "-") throw unknown("-");
      sources.push(token.value);
    } else if (!token.known || (token.flag === "--help" && token.inline)) throw unknown(token.flag);
    else if (token.flag === "--help") return null;
    else {
      if (token.value === undefined || token.value === "")
        throw new ConfigError(`flag ${token.flag} needs a value (shardguard merge --help)`);
      if (values.has(token.flag)) throw new ConfigError(`flag ${token.flag} was given twice`);
      values.set(token.flag, token.value);
    }
  }
  if (sources.length === 0)
    throw new ConfigError(`shardguard merge needs at least one DIR (the OUT of each shardguard run --shard I/N)`);
  const timings = values.get("--update-timings");
  return {
    sources: sources.map((s) => path.resolve(host.cwd, s)),
    out: path.resolve(host.cwd, values.get("--out") ?? DEFAULT_MERGE_OUT),
    updateTimings: timings === undefined ? null : path.resolve(host.cwd, timings),
  };
}
