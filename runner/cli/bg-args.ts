/** argv of `shardguard bg` and `status`; `bg` hands the rest to `run`, parsed here too to refuse it up front. */
import { parseArgs, readArgv } from "../config/args.ts";
import { resolveSettings } from "../config/load.ts";
import { ConfigError } from "../config/settings-schema.ts";
import type { BgOptions } from "../commands/bg/bg-command.ts";
import type { StatusOptions } from "../commands/bg/status.ts";
import type { Host } from "../engine/host.ts";
import { PRESET_FLAGS } from "./help.ts";

const BG_VALUED = ["--label", "--lock", "--cap", "--workflow", "--repo", "--ref"] as const;
const BG_BOOLEAN = ["--local", "--dispatch", "--follow", "--no-wait"] as const;
const isValued = (flag: string) => (BG_VALUED as readonly string[]).includes(flag);

/**
 * Splits `shardguard bg` argv into bg's options and the run's flags.
 *
 * @returns null when --help was asked
 * @throws ConfigError for a bad bg flag or a run flag `shardguard run` would refuse
 */
export function parseBgArgs(argv: readonly string[]): BgOptions | null {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  const runArgv: string[] = [];
  for (const token of readArgv(argv, BG_VALUED, BG_BOOLEAN)) {
    if (token.kind === "end") runArgv.push("--", ...token.rest);
    else if (token.kind === "positional") runArgv.push(token.value);
    else if (!token.known || (token.inline && !isValued(token.flag)))
      runArgv.push(token.arg); // --local=1 too: run refuses it
    else if (isValued(token.flag)) {
      if (values.has(token.flag)) throw new ConfigError(`flag ${token.flag} was given twice`);
      if (token.value === undefined || token.value === "")
        throw new ConfigError(`flag ${token.flag} needs a value (shardguard bg --help)`);
      values.set(token.flag, token.value);
    } else flags.add(token.flag);
  }
  if (flags.has("--local") && flags.has("--dispatch"))
    throw new ConfigError("--local and --dispatch exclude each other");
  const runArgs = parseArgs(runArgv, "bg", PRESET_FLAGS);
  if (runArgs.help) return null;
  const capRaw = values.get("--cap");
  const cap = capRaw === undefined ? null : Number(capRaw);
  if (cap !== null && (!Number.isInteger(cap) || cap < 1 || cap > 7 * 24 * 3600)) {
    throw new ConfigError(`invalid --cap ${JSON.stringify(capRaw)}: expected whole seconds from 1 to ${7 * 24 * 3600}`);
  }
  const repo = values.get("--repo") ?? null;
  if (repo !== null && !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repo))
    throw new ConfigError(`invalid --repo ${JSON.stringify(repo)}: expected OWNER/NAME`);
  return {
    runArgv,
    runArgs,
    label: values.get("--label") ?? null,
    lock: values.get("--lock") ?? null,
    capSeconds: cap,
    mode: flags.has("--local") ? "local" : flags.has("--dispatch") ? "dispatch" : "auto",
    workflow: values.get("--workflow") ?? null,
    repo,
    ref: values.get("--ref") ?? null,
    follow: flags.has("--follow"),
    noWait: flags.has("--no-wait"),
  };
}

/**
 * `shardguard status [TARGET] [--follow] [--repo OWNER/NAME] [--root DIR] [--out DIR]`.
 *
 * @returns null when --help was asked
 * @throws ConfigError for anything else
 */
export function parseStatusArgs(argv: readonly string[], host: Host): StatusOptions | null {
  const args = parseArgs(argv, "status", { valued: ["--repo"], boolean: ["--follow"] });
  if (args.help) return null;
  const stray = [...args.values.keys()].find((k) => k !== "root" && k !== "out");
  if (stray !== undefined || args.patterns.length > 1 || args.bunArgs.length > 0 || args.booleans.size > 0) {
    throw new ConfigError(
      "shardguard status takes [RUN_ID | LOG | CI_RUN_ID] [--follow] [--repo OWNER/NAME] [--root DIR] [--out DIR]",
    );
  }
  const settings = resolveSettings({
    args: { ...args, patterns: [] },
    env: host.env,
    cwd: host.cwd,
    defaultBun: process.execPath,
  });
  const repo = args.extras.get("--repo");
  return {
    target: args.patterns[0] ?? null,
    follow: args.extras.get("--follow") === true,
    out: settings.out,
    root: settings.root,
    repo: typeof repo === "string" ? repo : null,
  };
}
