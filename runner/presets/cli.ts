/**
 * The preset side of the `shardguard` command: `run --preset`, `list
 * --preset` and `init`. Dispatched from cli/main.ts; returns exit codes and
 * throws ConfigError for usage errors (main.ts prints them and exits 2).
 */
import path from "node:path";
import { parseArgs, type ParsedWithExtras } from "../config/args.ts";
import { ConfigError } from "../config/schema.ts";
import type { CliHost } from "../cli/main.ts";
import { EXIT } from "../results/model.ts";
import { splitBunTestArgs } from "./flags.ts";
import { applyInit, planInit } from "./init.ts";
import { executePresetRun, preparePresetRun, presetPlanLines } from "./session.ts";

/** Flags `run` and `list` take beyond the shared settings. */
export const PRESET_FLAGS = { valued: ["--preset", "--tier"] } as const;

/** Help rows for the preset flags of `run` / `list`. */
export const PRESET_FLAG_HELP = [
  `  ${"--preset NAME".padEnd(24)} run or list preset NAME (built-in gstack-paid, or [shardguard.presets.NAME] in bunfig.toml); PATTERNs then limit it to some of its files`,
  `  ${"--tier NAME".padEnd(24)} the preset's tier (gstack-paid: gate or periodic; default from EVALS_TIER, else gate)`,
];

/**
 * `shardguard run|list --preset NAME [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]`.
 *
 * @throws ConfigError for any usage or configuration error (nothing started)
 */
export async function presetCommand(command: "run" | "list", args: ParsedWithExtras, host: CliHost): Promise<number> {
  const name = args.extras.get("--preset");
  const tier = args.extras.get("--tier");
  if (typeof name !== "string") throw new ConfigError("flag --preset needs a value");
  const split = splitBunTestArgs(args.bunArgs);
  if (split.positionals.length > 0) {
    throw new ConfigError(`bun test flags after "--" cannot include files or filters (${JSON.stringify(split.positionals[0])}); put PATTERNs before "--"`);
  }
  const prepared = await preparePresetRun({
    name,
    via: "--preset",
    cwd: host.cwd,
    env: host.env,
    args,
    ...(typeof tier === "string" ? { tier } : {}),
    patterns: args.patterns,
    commandFlags: split.flags,
    flagsWhere: `flags after "--"`,
  });
  if (command === "list") {
    for (const line of presetPlanLines(prepared)) host.stdout(line);
    return EXIT.ok;
  }
  return executePresetRun(prepared, host);
}

const INIT_HELP = `shardguard init [--preset NAME] [--dry-run] [--root DIR]

Adds shardguard's preload to bunfig.toml [test] preload (keeping the others)
and .shardguard/ (reports and logs) to .gitignore.
With --preset NAME, also writes the entry test file <test root>/shardguard.NAME.test.ts
that \`bun test --preset NAME\` needs, and a package.json script (gstack-paid:
"test:gate": "bun test --preset gstack-paid"); an existing script is never replaced.
Running it again changes nothing. --dry-run prints the changes without writing.`;

/**
 * `shardguard init [--preset NAME] [--dry-run] [--root DIR]`.
 *
 * @throws ConfigError for usage errors, an unknown preset, or files it cannot edit safely
 */
export async function initCommand(argv: readonly string[], host: CliHost): Promise<number> {
  const args = parseArgs(argv, "init", { valued: ["--preset"], boolean: ["--dry-run"] });
  if (args.help) {
    host.stdout(INIT_HELP);
    return EXIT.ok;
  }
  const stray = [...args.values.keys()].find((k) => k !== "root");
  if (stray !== undefined || args.patterns.length > 0 || args.bunArgs.length > 0 || args.booleans.size > 0) {
    throw new ConfigError(`shardguard init takes only --preset NAME, --dry-run and --root DIR (shardguard init --help)`);
  }
  const root = path.resolve(host.cwd, args.values.get("root") ?? host.env.SHARDGUARD_ROOT ?? ".");
  const preset = args.extras.get("--preset");
  const dryRun = args.extras.get("--dry-run") === true;
  const { changes, ref } = planInit(root, typeof preset === "string" ? preset : null);
  for (const line of applyInit(root, changes, dryRun)) host.stdout(line);
  if (!ref.installed) {
    host.stdout(`shardguard init: note: ${root}/node_modules has no shardguard, so bunfig.toml points at ${ref.preload} (this copy of shardguard); after \`bun add -d shardguard\`, change it to \"shardguard/preset/preload.ts\"`);
  }
  const changed = changes.some((c) => c.action === "create" || c.action === "update");
  host.stdout(
    dryRun
      ? `shardguard init: dry run, nothing written${changed ? "" : " (nothing to change)"}`
      : changed
        ? `shardguard init: done${typeof preset === "string" ? `; run: bun test --preset ${preset}` : ""}`
        : "shardguard init: already set up, nothing changed",
  );
  return EXIT.ok;
}
