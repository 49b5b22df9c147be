/**
 * argv of `shardguard merge DIR... [--out DIR] [--update-timings FILE]`.
 */
import path from "node:path";
import { DEFAULT_MERGE_OUT, type MergeCommandInputs } from "../app/merge-command.ts";
import type { Host } from "../app/host.ts";
import { ConfigError } from "../config/schema.ts";

/**
 * Parses merge's argv; paths are resolved against the host's working directory.
 *
 * @returns null when --help was asked
 * @throws ConfigError for an unknown or repeated flag, a missing value, or no DIR
 */
export function parseMergeArgs(argv: readonly string[], host: Pick<Host, "cwd">): MergeCommandInputs | null {
  const sources: string[] = [];
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h" || arg === "--help") return null;
    if (!arg.startsWith("-")) {
      sources.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (flag !== "--out" && flag !== "--update-timings") throw new ConfigError(`unknown flag ${flag} for shardguard merge; accepted: --out DIR, --update-timings FILE`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === "") throw new ConfigError(`flag ${flag} needs a value (shardguard merge --help)`);
    if (values.has(flag)) throw new ConfigError(`flag ${flag} was given twice`);
    values.set(flag, value);
  }
  if (sources.length === 0) throw new ConfigError(`shardguard merge needs at least one DIR (the OUT of each shardguard run --shard I/N)`);
  const timings = values.get("--update-timings");
  return {
    sources: sources.map((s) => path.resolve(host.cwd, s)),
    out: path.resolve(host.cwd, values.get("--out") ?? DEFAULT_MERGE_OUT),
    updateTimings: timings === undefined ? null : path.resolve(host.cwd, timings),
  };
}
