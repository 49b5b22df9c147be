/**
 * The `shardguard` command line: parses argv, hands each command to the
 * application layer (app/), prints usage errors, and returns the exit code.
 * Never exits the process itself (cli-entry.ts does), so tests and
 * embedders can call it.
 */
import path from "node:path";
import { parseArgs } from "../config/args.ts";
import { ConfigError } from "../config/schema.ts";
import type { Host } from "../app/host.ts";
import { initCommand } from "../app/init-command.ts";
import { mergeCommand } from "../app/merge-command.ts";
import { settleRefusal } from "../app/refused.ts";
import { runCommand } from "../app/run-command.ts";
import { TOOL_VERSION } from "../util/version.ts";
import { EXIT } from "../results/model.ts";
import { bgCommand } from "../app/bg/command.ts";
import { statusCommand } from "../app/bg/status.ts";
import { bgWorker, type WorkerSpec } from "../app/bg/worker.ts";
import { parseBgArgs, parseStatusArgs } from "./bg-args.ts";
import { parseMergeArgs } from "./merge-args.ts";
import { BG_HELP, flagHelp, INIT_HELP, MERGE_HELP, PRESET_FLAGS, STATUS_HELP, USAGE } from "./help.ts";

/**
 * Runs the CLI with `argv` (without the executable and script).
 *
 * @returns the process exit code
 */
export async function main(argv: readonly string[], host: Host): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case "help":
      case "--help":
      case "-h":
        host.stdout(USAGE);
        return command === undefined ? EXIT.usage : EXIT.ok;
      case "--version":
      case "version":
        host.stdout(TOOL_VERSION);
        return EXIT.ok;
      case "run":
      case "list": {
        const args = parseArgs(rest, command, PRESET_FLAGS);
        if (args.help) {
          host.stdout(flagHelp(command));
          return EXIT.ok;
        }
        if (command === "list" && args.bunArgs.length > 0) {
          throw new ConfigError(`list takes no bun test flags after "--" (they are for run)`);
        }
        return await runCommand(command, args, host);
      }
      case "init":
        return initFromArgs(rest, host);
      case "bg": {
        const options = parseBgArgs(rest);
        if (options === null) return (host.stdout(BG_HELP), EXIT.ok);
        const follow = (log: string) => statusCommand({ target: log, follow: true, out: "", root: host.cwd, repo: null }, host);
        return await bgCommand(options, host, follow);
      }
      case "status": {
        const options = parseStatusArgs(rest, host);
        if (options === null) return (host.stdout(STATUS_HELP), EXIT.ok);
        return await statusCommand(options, host);
      }
      case "__bg-worker":
        return await bgWorker(JSON.parse(rest[0] ?? "{}") as WorkerSpec, host, (argv, runHost) => main(["run", ...argv], runHost));
      case "merge": {
        const inputs = parseMergeArgs(rest, host);
        if (inputs === null) return (host.stdout(MERGE_HELP), EXIT.ok);
        return await mergeCommand(inputs, host);
      }
      default:
        throw new ConfigError(`unknown command ${JSON.stringify(command)}; accepted: run, list, merge, bg, status, init, help`);
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      host.stderr(`shardguard: ${error.message}`);
      // Earlier reports must not pass for this run's (docs/reports.md).
      if (command === "run") settleRefusal(rest, host, error.message);
      return EXIT.usage;
    }
    throw error;
  }
}

/** `shardguard init [--preset NAME] [--dry-run] [--root DIR]`; throws ConfigError for usage errors. */
function initFromArgs(argv: readonly string[], host: Host): number {
  const args = parseArgs(argv, "init", { valued: ["--preset"], boolean: ["--dry-run"] });
  if (args.help) {
    host.stdout(INIT_HELP);
    return EXIT.ok;
  }
  const stray = [...args.values.keys()].find((k) => k !== "root");
  if (stray !== undefined || args.patterns.length > 0 || args.bunArgs.length > 0 || args.booleans.size > 0) {
    throw new ConfigError(`shardguard init takes only --preset NAME, --dry-run and --root DIR (shardguard init --help)`);
  }
  const preset = args.extras.get("--preset");
  return initCommand(
    {
      root: path.resolve(host.cwd, args.values.get("root") ?? host.env.SHARDGUARD_ROOT ?? "."),
      preset: typeof preset === "string" ? preset : null,
      dryRun: args.extras.get("--dry-run") === true,
    },
    host,
  );
}
