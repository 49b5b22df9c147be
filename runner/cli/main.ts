/**
 * The `shardguard` command line: argv to commands/, usage errors, the exit code; never exits (cli-entry.ts does).
 * Each command's modules load only when it runs: every suite pays the runner's start-up.
 */
import path from "node:path";
import { parseArgs } from "../config/args.ts";
import { ConfigError } from "../config/settings-schema.ts";
import type { Host } from "../engine/host.ts";
import type { WorkerSpec } from "../commands/bg/worker.ts";
import { TOOL_VERSION } from "../util/version.ts";
import { EXIT } from "../results/codes.ts";
import { processHost } from "./process-host.ts";
import {
  BG_HELP,
  flagHelp,
  HISTORY_HELP,
  INIT_HELP,
  MERGE_HELP,
  PRESET_FLAGS,
  SHOW_REPORT_HELP,
  STATUS_HELP,
  USAGE,
} from "./help.ts";
/**
 * Runs the CLI with `argv` (without the executable and script), as the
 * `shardguard` command would, but returns the exit code instead of exiting.
 *
 * @param argv e.g. `["run", "test/", "--jobs", "2"]`
 * @param host the process it runs in (environment, cwd, output, signals); default the real
 *   process ({@link processHost}). Pass your own to capture output or run elsewhere.
 * @returns the exit code (docs/configuration.md, "Exit codes"); usage and configuration
 *   errors print one line on `host.stderr` and return 2
 * @throws TypeError naming what is expected when `host` is not a {@link Host} (e.g. `processHost` itself);
 *   anything else that went wrong (an internal error); the command prints it as one line
 */
export async function main(argv: readonly string[], host: Host = processHost()): Promise<number> {
  checkHost(host);
  const [command, ...rest] = argv;
  try {
    const handler = COMMANDS.get(command);
    if (handler === undefined) {
      throw new ConfigError(
        `unknown command ${JSON.stringify(command)}; accepted: run, list, merge, history, bg, status, init, ` +
          `show-report, help`,
      );
    }
    return await handler(command, rest, host);
  } catch (error) {
    if (error instanceof ConfigError) {
      host.stderr(`shardguard: ${error.message}`);
      // Earlier reports must not pass for this run's (docs/reports.md).
      if (command === "run") (await import("../engine/refused.ts")).settleRefusal(rest, host, error.message);
      return EXIT.usage;
    }
    throw error;
  }
}

/** The members every command reads; a host without them would fail deep inside a command instead. */
const HOST_MEMBERS = { env: "object", cwd: "string", stdout: "function", stderr: "function", onSignal: "function" };

/** Refuses a `host` that is not a {@link Host}, naming what is expected (an embedder's mistake, not a usage error). */
function checkHost(host: unknown): void {
  const expected = "a Host: { env, cwd, stdout, stderr, onSignal }, such as the result of processHost()";
  if (typeof host === "function") {
    throw new TypeError(`main(argv, host): host is a function; expected ${expected} (call it: processHost())`);
  }
  if (typeof host !== "object" || host === null) throw new TypeError(`main(argv, host): expected ${expected}`);
  const record = host as Record<string, unknown>;
  const wrong = Object.entries(HOST_MEMBERS).filter(([k, t]) => typeof record[k] !== t || record[k] === null);
  if (wrong.length > 0) {
    const named = wrong.map(([k, t]) => `${k} (${t})`).join(", ");
    throw new TypeError(`main(argv, host): host lacks ${named}; expected ${expected}`);
  }
}

/** One command: its name as typed (undefined: none), the arguments after it; returns the exit code. */
type CommandHandler = (command: string | undefined, rest: readonly string[], host: Host) => Promise<number>;

/** `shardguard` (no command), `help`, `--help`, `-h`: usage; a missing command is a usage error (exit 2). */
async function helpCommand(command: string | undefined, _rest: readonly string[], host: Host): Promise<number> {
  host.stdout(USAGE);
  return command === undefined ? EXIT.usage : EXIT.ok;
}

/** `shardguard version` / `--version`. */
async function versionCommand(_command: string | undefined, _rest: readonly string[], host: Host): Promise<number> {
  host.stdout(TOOL_VERSION);
  return EXIT.ok;
}

/** `shardguard run|list [PATTERN...] [FLAGS] [-- BUN FLAGS]`; `list` takes no bun test flags. */
async function runOrList(command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  const name = command === "list" ? "list" : "run";
  const args = parseArgs(rest, name, PRESET_FLAGS);
  if (args.help) {
    host.stdout(flagHelp(name));
    return EXIT.ok;
  }
  if (name === "list" && args.bunArgs.length > 0) {
    throw new ConfigError(`list takes no bun test flags after "--" (they are for run)`);
  }
  const { runCommand } = await import("../commands/run-command.ts");
  return await runCommand(name, args, host);
}

/** `shardguard bg ...`: a run in the background, followed by its status when asked. */
async function bgFromArgs(_command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  const [{ parseBgArgs }, { bgCommand }, { statusCommand }] = await Promise.all([
    import("./bg-args.ts"),
    import("../commands/bg/bg-command.ts"),
    import("../commands/bg/status.ts"),
  ]);
  const options = parseBgArgs(rest);
  if (options === null) {
    host.stdout(BG_HELP);
    return EXIT.ok;
  }
  const follow = (log: string) =>
    statusCommand({ target: log, follow: true, out: "", root: host.cwd, repo: null }, host);
  return await bgCommand(options, host, follow);
}

/** `shardguard status ...`: a background run's state. */
async function statusFromArgs(_command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  const [{ parseStatusArgs }, { statusCommand }] = await Promise.all([
    import("./bg-args.ts"),
    import("../commands/bg/status.ts"),
  ]);
  const options = parseStatusArgs(rest, host);
  if (options === null) {
    host.stdout(STATUS_HELP);
    return EXIT.ok;
  }
  return await statusCommand(options, host);
}

/** `shardguard __bg-worker SPEC`: the detached process of `bg`, which runs `run` with the spec's argv. */
async function bgWorkerFromArgs(_command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  const { bgWorker } = await import("../commands/bg/worker.ts");
  return await bgWorker(JSON.parse(rest[0] ?? "{}") as WorkerSpec, host, (argv, runHost) =>
    main(["run", ...argv], runHost),
  );
}

/** `shardguard merge ...`: one report from the reports of several runs. */
async function mergeFromArgs(_command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  const [{ parseMergeArgs }, { mergeCommand }] = await Promise.all([
    import("./merge-args.ts"),
    import("../commands/merge-command.ts"),
  ]);
  const inputs = parseMergeArgs(rest, host);
  if (inputs === null) {
    host.stdout(MERGE_HELP);
    return EXIT.ok;
  }
  return await mergeCommand(inputs, host);
}

/** `shardguard history ...`: questions over many runs, import and prune. */
async function historyFromArgs(_command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  const [{ parseHistoryArgs }, { historyCommand }] = await Promise.all([
    import("./history-args.ts"),
    import("../commands/history-command.ts"),
  ]);
  const inputs = parseHistoryArgs(rest, host);
  if (inputs === null) {
    host.stdout(HISTORY_HELP);
    return EXIT.ok;
  }
  return await historyCommand(inputs, host);
}

/** Every command by the names it answers to; any other is a usage error. */
const COMMANDS: ReadonlyMap<string | undefined, CommandHandler> = new Map<string | undefined, CommandHandler>([
  [undefined, helpCommand],
  ["help", helpCommand],
  ["--help", helpCommand],
  ["-h", helpCommand],
  ["--version", versionCommand],
  ["version", versionCommand],
  ["run", runOrList],
  ["list", runOrList],
  ["init", (_command, rest, host) => initFromArgs(rest, host)],
  ["bg", bgFromArgs],
  ["status", statusFromArgs],
  ["__bg-worker", bgWorkerFromArgs],
  ["merge", mergeFromArgs],
  ["history", historyFromArgs],
  ["show-report", showReportFromArgs],
]);

/** `shardguard show-report [OUT]`: report.html's path, opened where a browser can be. */
async function showReportFromArgs(_command: string | undefined, rest: readonly string[], host: Host): Promise<number> {
  if (rest.includes("--help") || rest.includes("-h")) {
    host.stdout(SHOW_REPORT_HELP);
    return EXIT.ok;
  }
  const flag = rest.find((a) => a.startsWith("-"));
  if (flag !== undefined || rest.length > 1)
    throw new ConfigError(`shardguard show-report takes one OUT directory or report.html, not ${rest.join(" ")}`);
  const { showReport } = await import("../commands/show-report.ts");
  return showReport(rest[0], host);
}

/** `shardguard init [--preset NAME] [--dry-run] [--root DIR]`; throws ConfigError for usage errors. */
async function initFromArgs(argv: readonly string[], host: Host): Promise<number> {
  const args = parseArgs(argv, "init", { valued: ["--preset"], boolean: ["--dry-run"] });
  if (args.help) {
    host.stdout(INIT_HELP);
    return EXIT.ok;
  }
  const stray = [...args.values.keys()].find((k) => k !== "root");
  if (stray !== undefined || args.patterns.length > 0 || args.bunArgs.length > 0 || args.booleans.size > 0) {
    throw new ConfigError(
      `shardguard init takes only --preset NAME, --dry-run and --root DIR (shardguard init --help)`,
    );
  }
  const preset = args.extras.get("--preset");
  const { initCommand } = await import("../commands/init-command.ts");
  return initCommand(
    {
      root: path.resolve(host.cwd, args.values.get("root") ?? host.env.SHARDGUARD_ROOT ?? "."),
      preset: typeof preset === "string" ? preset : null,
      dryRun: args.extras.get("--dry-run") === true,
    },
    host,
  );
}
