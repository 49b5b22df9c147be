/**
 * Command dispatch for `shardguard`: parses, validates, plans, runs, and
 * returns the exit code. Never exits the process itself (cli.ts does), so the
 * preset preload and tests can call it.
 */
import path from "node:path";
import { parseArgs } from "../config/args.ts";
import { resolveSettings } from "../config/load.ts";
import { ConfigError, SETTINGS, type RunSettings } from "../config/schema.ts";
import { planRun, type Plan } from "../plan/plan.ts";
import { EXIT } from "../results/model.ts";
import { TOOL_VERSION } from "../run.ts";
import { plural } from "../report/console.ts";
import { initCommand, PRESET_FLAG_HELP, PRESET_FLAGS, presetCommand } from "../presets/cli.ts";
import { executeRun } from "./execute.ts";
import { preflight } from "./preflight.ts";
import { settleRefusal } from "./refused.ts";

/** What the CLI needs from its host process; injectable for tests. */
export interface CliHost {
  env: Record<string, string | undefined>;
  cwd: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Registers the cancellation handler for SIGINT / SIGTERM; may return a function that removes it. */
  onSignal: (handler: (signal: "SIGINT" | "SIGTERM") => void) => void | (() => void);
  /** Raw stdout writer (no newline added), for the live status area. */
  write?: (text: string) => void;
  /** True when stdout is a terminal: live status area instead of heartbeat lines. */
  isTTY?: boolean;
  columns?: number;
}

const USAGE = `shardguard ${TOOL_VERSION}: run expensive bun test tiers one shard per process, under a wall-clock timeout

Usage:
  shardguard run  [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]   plan and run
  shardguard list [PATTERN...] [flags]                          print the plan, run nothing
  shardguard run|list --preset NAME [--tier T] [PATTERN...]     run or list a preset (docs/presets.md)
  shardguard init [--preset NAME] [--dry-run]                   add the bun test preload (and a preset's entry file)
  shardguard help | --help | --version

Run "shardguard run --help" for the flags.`;

function flagHelp(command: "run" | "list"): string {
  const rows = SETTINGS.map((s) => `  ${(s.flag + " " + (({ path: "PATH", posint: "N", names: "NAMES", name: "NAME", onoff: "on|off" } as Record<string, string>)[s.kind] ?? "SECONDS")).padEnd(24)} ${s.help}  [env ${s.env}]`);
  const extra =
    command === "run"
      ? [`  ${"--no-test-events".padEnd(24)} run without the inspector event channel (no per-test data in killed shards)`]
      : [];
  const what =
    command === "run"
      ? "shardguard run [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]\n\nPlans test files into shards and runs each shard as its own `bun test` process group.\nFlags after -- go to every bun test child unchanged (e.g. -- --retry 1 --concurrent)."
      : "shardguard list [PATTERN...] [flags]\n\nPrints the plan (shards, files, why each file is in or out) and runs nothing.";
  return [
    what,
    "",
    "PATTERN: globs relative to --root (default: Bun's test naming, **/*{.test,_test,.spec,_spec}.{ts,tsx,js,jsx,mjs,cjs}).",
    "",
    "Flags (precedence: flag > environment > bunfig.toml [shardguard] > default):",
    ...rows,
    ...PRESET_FLAG_HELP,
    ...extra,
    "",
    "Exit codes: 0 all passed, 1 something failed/timed out/crashed/never started, 2 usage error, 130/143 cancelled.",
  ].join("\n");
}

/**
 * Runs the CLI with `argv` (without the executable and script).
 *
 * @returns the process exit code
 */
export async function main(argv: readonly string[], host: CliHost): Promise<number> {
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
      case "list":
        return await runOrList(command, rest, host);
      case "init":
        return await initCommand(rest, host);
      default:
        throw new ConfigError(`unknown command ${JSON.stringify(command)}; accepted: run, list, init, help`);
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

async function runOrList(command: "run" | "list", argv: readonly string[], host: CliHost): Promise<number> {
  const args = parseArgs(argv, command, PRESET_FLAGS);
  if (args.help) {
    host.stdout(flagHelp(command));
    return EXIT.ok;
  }
  if (command === "list" && args.bunArgs.length > 0) {
    throw new ConfigError(`list takes no bun test flags after "--" (they are for run)`);
  }
  if (args.extras.has("--preset")) return await presetCommand(command, args, host);
  if (args.extras.has("--tier")) throw new ConfigError(`flag --tier needs --preset NAME (tiers belong to a preset)`);
  const settings = resolveSettings({ args, env: host.env, cwd: host.cwd, defaultBun: process.execPath });
  const plan = planRun({ root: settings.root, patterns: settings.patterns, filesPerShard: settings.filesPerShard, ignore: outIgnore(settings) });
  if (command === "list") {
    for (const line of planLines(plan, settings)) host.stdout(line);
    return EXIT.ok;
  }
  for (const e of plan.excluded) host.stderr(`shardguard: warning: ${e.file}: ${e.reason}`);
  const planned = plan.shards.flatMap((s) => s.files.map((f) => path.resolve(settings.root, f)));
  const checked = await preflight(settings, planned);
  const result = await executeRun({ settings, plan, bunVersion: checked.bunVersion, env: host.env }, host);
  return result.exitCode;
}

/** The output directory, when inside the root, is never searched for tests. */
function outIgnore(settings: RunSettings): string[] {
  const rel = settings.out.startsWith(settings.root + "/") ? settings.out.slice(settings.root.length + 1) : null;
  return rel ? [`${rel}/**`] : [];
}

/** Human-readable plan: shards with their files, why each file is in, what was left out. */
export function planLines(plan: Plan, settings: RunSettings): string[] {
  const lines = [
    `shardguard: ${plural(plan.shards.length, "shard")}, ${plural(plan.included.size, "file")} under ${plan.root}`,
    `  jobs ${settings.jobs}, timeout ${settings.timeoutMs / 1000}s, grace ${settings.graceMs / 1000}s, files per shard ${settings.filesPerShard}`,
  ];
  for (const shard of plan.shards) {
    lines.push(`  shard ${shard.index}/${plan.shards.length} [${shard.slug}]`);
    for (const file of shard.files) lines.push(`    ${file}  (${plan.included.get(file) ?? "planned"})`);
  }
  if (plan.excluded.length > 0) {
    lines.push(`Excluded (${plan.excluded.length}):`);
    for (const e of plan.excluded) lines.push(`  - ${e.file}  [${e.reason}]`);
  }
  return lines;
}
