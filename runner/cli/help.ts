/**
 * The help texts of the `shardguard` command. The flag rows come from the
 * settings table (config/settings-schema.ts), so help and parsing never disagree.
 */
import { RUN_FLAGS } from "../config/args.ts";
import { SETTINGS } from "../config/settings-schema.ts";
import { TOOL_VERSION } from "../util/version.ts";

/** Flags `run` and `list` take beyond the shared settings. */
export const PRESET_FLAGS = RUN_FLAGS;

/** Help rows for the preset flags of `run` / `list`. */
const PRESET_FLAG_HELP = [
  `  ${"--preset NAME".padEnd(24)} run or list preset NAME (built-in gstack-paid, or [shardguard.presets.NAME] in ` +
    `bunfig.toml); PATTERNs then limit it to some of its files`,
  `  ${"--tier NAME".padEnd(24)} the preset's tier (gstack-paid: gate or periodic; default from EVALS_TIER, else gate)`,
  `  ${"--shard I/N|auto".padEnd(24)} CI matrix: plan everything, run only slice I of N (a slice is a set of whole ` +
    `shards; not --files-per-shard); auto: from GitLab, Buildkite or CircleCI parallel-job variables; merge with ` +
    `shardguard merge (docs/sharding.md)`,
];

/** Help row of --last-failed (run and list). */
const LAST_FAILED_HELP =
  `  ${"--last-failed".padEnd(24)} only the files that failed, timed out, crashed or never ` +
  `started in the newest run under OUT/runs`;

export const INIT_HELP = `shardguard init [--preset NAME] [--dry-run] [--root DIR]

Adds shardguard's preload to bunfig.toml [test] preload (keeping the others)
and .shardguard/ (reports and logs) to .gitignore.
With --preset NAME, also writes the entry test file <test root>/shardguard.NAME.test.ts
that \`bun test --preset NAME\` needs, and a package.json script (gstack-paid:
"test:gate": "bun test --preset gstack-paid"); an existing script is never replaced.
Running it again changes nothing.

  --preset NAME   also the preset's entry test file and package.json script
  --dry-run       print the changes without writing them
  --root DIR      the project to change (default: SHARDGUARD_ROOT, else the current directory)`;

export const BG_HELP = `shardguard bg [PATTERN...] [RUN FLAGS...] [--label NAME] [--lock NAME] [--cap SECONDS]
              [--local | --dispatch] [--workflow FILE] [--repo OWNER/NAME] [--ref BRANCH]
              [--follow] [--no-wait] [-- BUN_TEST_FLAGS...]

Starts \`shardguard run\` with the RUN FLAGS in the background (its own session, output to
OUT/bg/<id>.log), prints the id and the log, and returns (exit 0). The log's last line is
"### shardguard EXIT=<code> ###": 0 passed, 1 failed, 130 cancelled, 2 cap reached or other.
A clean checkout pushed to GitHub is dispatched to CI (gh workflow run) and followed instead,
unless --local; otherwise every reason is printed and it runs here (--dispatch refuses, exit 2).

  --label NAME        name in the run id (default: the preset and tier, or "run")
  --lock NAME         lane: bg runs of one lane run one at a time (default: per root and preset)
  --no-wait           refuse (exit 2) instead of queueing when the lane is busy
  --cap SECONDS       wall-clock cap of the whole run (default: ceil(1.5 x planned serial
                      seconds / jobs) + 20 min, at most 4 h; planned seconds from the run's
                      --timings, 10 min per file without a record); when reached the run is cancelled
  --local | --dispatch   force a backend
  --workflow FILE     workflow to dispatch (default: the preset's, else shardguard-bg.yml)
  --repo OWNER/NAME   repository to dispatch on (default: the preset's, else origin)
  --ref BRANCH        branch to dispatch (default: the current branch)
  --follow            stay and stream the log; exit with the run's code
Tests see SHARDGUARD_RUN_ID (and the preset's run-id variable) set to the id unless exported.
docs/background.md has the details.`;

export const STATUS_HELP =
  `shardguard status [RUN_ID | LOG | CI_RUN_ID] [--follow] [--repo OWNER/NAME] [--root DIR] ` +
  `[--out DIR]

Prints the state of a background run (running, passed, failed, cancelled, incomplete), its
counts so far and the test in flight per running shard; without an argument, the newest run
under OUT/bg. A CI run id (digits) is asked of gh. --follow streams until the run ends and
exits with its code (0 passed, 1 failed, 130 cancelled, 2 other or incomplete).`;
export const SHOW_REPORT_HELP = `shardguard show-report [OUT]

Prints the path of OUT/report.html (OUT: the run's --out directory, default .shardguard, or a
report.html itself) and opens it in a browser: with open on macOS, with xdg-open where a display
is set (DISPLAY or WAYLAND_DISPLAY); elsewhere (CI, SSH) it only prints the path. Exit 2 when
there is no report.html there.`;
export const HISTORY_HELP = `shardguard history [--flaky | --failing | --slow | --cost | --runs | --test NAME]
                   [--json] [--branch NAME] [--last N] [--since DATE] [--history URL] [--root DIR] [--out DIR]
shardguard history import DIR|report.json...
shardguard history prune --keep N

Answers questions over the runs in the history (default OUT/history.sqlite; --history
postgres://... or SHARDGUARD_HISTORY_URL for PostgreSQL): --flaky (both outcomes: flip
rate per kind, last flip, first seen), --failing (failing now, since which run), --slow and
--cost (largest and fastest-growing), --test NAME (its outcomes), --runs (default). --last N
runs (default 20), --branch, --since an ISO date. import adds the runs of report.json files
(CI artifacts); prune keeps the newest N runs. docs/history.md.`;

export const MERGE_HELP = `shardguard merge DIR... [--out DIR] [--update-timings FILE]

Merges the reports of the slices of one plan (each DIR is the OUT of a
\`shardguard run --shard I/N\`, or its report.json) into one JUnit, JSON and
CTRF report of the whole plan, written to --out (default .shardguard/merged).
Every planned file is in it; the files of a slice that reported nothing are
never-started ("slice I/N reported nothing"). --update-timings FILE merges the
measured per-file durations into a Bun timings file.

Exit codes: 0 every planned file passed, 1 otherwise (a missing slice
included), 2 the slices come from different plans (plan hash), a slice or a
file is reported twice, or no report was found.`;

export const USAGE =
  `shardguard ${TOOL_VERSION}: run expensive bun test tiers one shard per process, under a ` +
  `wall-clock timeout

Usage:
  shardguard run  [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]   plan and run
  shardguard list [PATTERN...] [flags]                          print the plan, run nothing
  shardguard run|list --preset NAME [--tier T] [PATTERN...]     run or list a preset (docs/presets.md)
  shardguard bg [RUN FLAGS...] [bg flags]                       start a run in the background (or on CI), return at once
  shardguard status [RUN_ID | LOG | CI_RUN_ID] [--follow]       state of a background run (default: the newest)
  shardguard run|list --shard I/N [PATTERN...] [flags]          one slice of the plan, for a CI matrix ` +
  `(docs/sharding.md)
  shardguard merge DIR... [--out DIR] [--update-timings FILE]   merge the slices' reports, checked against the plan
  shardguard init [--preset NAME] [--dry-run]                   add the bun test preload (and a preset's entry file)
  shardguard show-report [OUT]                                  print report.html's path and open it in a browser
  shardguard help | --help | --version

Run "shardguard run --help" for the flags.`;

export function flagHelp(command: "run" | "list"): string {
  const rows = SETTINGS.map(
    (s) =>
      `  ${`${s.flag} ${
        (
          {
            path: "PATH",
            posint: "N",
            filesPerShard: "N|auto",
            names: "NAMES",
            name: "NAME",
            onoff: "on|off",
            passfail: "pass|fail",
            paths: "PATHS",
            globs: "GLOBS",
            resources: "SPEC",
            usd: "DOLLARS",
          } as Record<string, string>
        )[s.kind] ?? "SECONDS"
      }`.padEnd(24)} ${s.help}  [env ${s.env}]`,
  );
  const extra =
    command === "run"
      ? [
          `  ${"--no-test-events".padEnd(24)} run without the inspector event channel ` +
            `(no per-test data in killed shards)`,
          `  ${"--budget-kill".padEnd(24)} at the budget, end running shards too (SIGTERM, grace, SIGKILL)  ` +
            "[env SHARDGUARD_BUDGET_KILL]",
          `  ${"--history PATH|URL".padEnd(24)} run history: a SQLite file or postgres://… (default ` +
            "OUT/history.sqlite; docs/history.md)  [env SHARDGUARD_HISTORY_URL]",
          `  ${"--no-history".padEnd(24)} remember nothing of this run  [env SHARDGUARD_NO_HISTORY]`,
        ]
      : [];
  const what =
    command === "run"
      ? "shardguard run [PATTERN...] [flags] [-- BUN_TEST_FLAGS...]\n\nPlans test files into shards and runs each " +
        "shard as its own `bun test` process group.\nFlags after -- go to every bun test child unchanged (e.g. -- " +
        "--retry 1 --concurrent)."
      : "shardguard list [PATTERN...] [flags]\n\nPrints the plan (shards, files, why each file is in or out) and " +
        "runs nothing.";
  return [
    what,
    "",
    "PATTERN: globs relative to --root (default: Bun's test naming, " +
      "**/*{.test,_test,.spec,_spec}.{ts,tsx,js,jsx,mjs,cjs}).",
    "",
    "Flags (precedence: flag > environment > bunfig.toml [shardguard] > default):",
    ...rows,
    ...PRESET_FLAG_HELP,
    LAST_FAILED_HELP,
    ...extra,
    "",
    "Exit codes: 0 all passed, 1 something failed/timed out/crashed/never started, 2 usage error, 130/143 cancelled.",
  ].join("\n");
}
