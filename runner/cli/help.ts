/**
 * The help texts of the `shardguard` command. The flag rows come from the
 * settings table (config/schema.ts), so help and parsing never disagree.
 */
import { SETTINGS } from "../config/schema.ts";
import { TOOL_VERSION } from "../util/version.ts";

/** Flags `run` and `list` take beyond the shared settings. */
export const PRESET_FLAGS = { valued: ["--preset", "--tier"] } as const;

/** Help rows for the preset flags of `run` / `list`. */
const PRESET_FLAG_HELP = [
  `  ${"--preset NAME".padEnd(24)} run or list preset NAME (built-in gstack-paid, or [shardguard.presets.NAME] in bunfig.toml); PATTERNs then limit it to some of its files`,
  `  ${"--tier NAME".padEnd(24)} the preset's tier (gstack-paid: gate or periodic; default from EVALS_TIER, else gate)`,
];

export const INIT_HELP = `shardguard init [--preset NAME] [--dry-run] [--root DIR]

Adds shardguard's preload to bunfig.toml [test] preload (keeping the others)
and .shardguard/ (reports and logs) to .gitignore.
With --preset NAME, also writes the entry test file <test root>/shardguard.NAME.test.ts
that \`bun test --preset NAME\` needs, and a package.json script (gstack-paid:
"test:gate": "bun test --preset gstack-paid"); an existing script is never replaced.
Running it again changes nothing. --dry-run prints the changes without writing.`;

export const USAGE = `shardguard ${TOOL_VERSION}: run expensive bun test tiers one shard per process, under a wall-clock timeout

Usage:
  shardguard run  [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]   plan and run
  shardguard list [PATTERN...] [flags]                          print the plan, run nothing
  shardguard run|list --preset NAME [--tier T] [PATTERN...]     run or list a preset (docs/presets.md)
  shardguard init [--preset NAME] [--dry-run]                   add the bun test preload (and a preset's entry file)
  shardguard help | --help | --version

Run "shardguard run --help" for the flags.`;

export function flagHelp(command: "run" | "list"): string {
  const rows = SETTINGS.map((s) => `  ${(s.flag + " " + (({ path: "PATH", posint: "N", names: "NAMES", name: "NAME", onoff: "on|off", paths: "PATHS" } as Record<string, string>)[s.kind] ?? "SECONDS")).padEnd(24)} ${s.help}  [env ${s.env}]`);
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

