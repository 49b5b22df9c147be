/** Runs a plan with live progress, signals, redaction and the optional lock: shared by `run` and the presets. */
import { ConfigError } from "../config/settings-schema.ts";
import { acquireRunLock, LockAbortedError, lockWaitMessage, type RunLock } from "./lock.ts";
import { makeRedactor } from "../results/redact.ts";
import { startProgress, type Progress } from "../report/progress.ts";
import { EXIT } from "../results/codes.ts";
import type { RunReport } from "../results/report-model.ts";
import { Run, type RunInputs } from "./run.ts";
import { githubActive, publishToGithub } from "./github-publish.ts";
import type { Host } from "./host.ts";
import { randomHex } from "../util/random.ts";
import { DEBUGGER_ENV } from "../exec/bun-command.ts";

/** Console writers of a host that pass every line through the secret redactor. */
export interface RedactingOutput {
  redact: (text: string) => string;
  /** A line (newline added by the host). */
  stdout: (text: string) => void;
  /** Raw text (the live status area). */
  write: (text: string) => void;
}

/**
 * Wraps `host`'s output so secret-looking environment values (and `settings.redact` names) never reach the console.
 * @throws ConfigError when `settings.redact` holds an invalid name
 */
export function redactingOutput(
  host: Host,
  env: Record<string, string | undefined>,
  settings: { redact: string[] },
): RedactingOutput {
  let redact: (text: string) => string;
  try {
    redact = makeRedactor(env, { extraNames: settings.redact });
  } catch (error) {
    throw new ConfigError(`invalid --redact: ${(error as Error).message}`);
  }
  const stdout = (text: string) => host.stdout(redact(text));
  const write = host.write
    ? (text: string) => host.write!(redact(text))
    : (text: string) => stdout(text.replace(/\n$/, ""));
  return { redact, stdout, write };
}

/** Outcome of {@link executeRun}; `report` is null when the run was cancelled while waiting for its lock. */
export interface ExecuteResult {
  exitCode: number;
  report: RunReport | null;
}

/**
 * Takes the lock (`settings.lock`), starts a {@link Run} of `inputs` with progress on `host` and SIGINT / SIGTERM
 * as cancellation, and resolves with the exit code. Console and reports are redacted; shard logs stay raw.
 * @throws ConfigError when `--redact` names are invalid or the lock cannot be used
 */
export async function executeRun(
  inputs: Omit<RunInputs, "out" | "beforeSummary" | "redact">,
  host: Host,
): Promise<ExecuteResult> {
  const { redact, stdout, write } = redactingOutput(host, inputs.env, inputs.settings);

  let current: { cancel(signal: "SIGINT" | "SIGTERM"): void } | null = null;
  let cancelledWhileWaiting: "SIGINT" | "SIGTERM" | null = null;
  const waiting = new AbortController();
  const unsubscribe = host.onSignal((signal) => {
    if (current) current.cancel(signal);
    else {
      cancelledWhileWaiting = signal;
      waiting.abort();
    }
  });

  const debuggerVars = DEBUGGER_ENV.filter((name) => inputs.env[name]);
  if (debuggerVars.length > 0) {
    const [them, are] = debuggerVars.length > 1 ? ["them", "are"] : ["it", "is"];
    stdout(
      `shardguard: note: ${debuggerVars.join(" and ")} ${are} set (a debugger's, as an editor's debug terminal sets ` +
        `${them}); shard children run without ${them}: each would listen at that address or wait for its debugger`,
    );
  }

  let lock: RunLock | null = null;
  if (inputs.settings.lock) {
    const name = inputs.settings.lock;
    try {
      lock = await acquireRunLock(name, {
        onWait: (holder) => stdout(`shardguard: ${lockWaitMessage(name, holder)}`),
        signal: waiting.signal,
      });
    } catch (error) {
      unsubscribe?.();
      if (error instanceof LockAbortedError) {
        stdout(`shardguard: cancelled by ${cancelledWhileWaiting} while waiting for lock ${name}; nothing ran`);
        return { exitCode: cancelledWhileWaiting === "SIGTERM" ? EXIT.sigterm : EXIT.sigint, report: null };
      }
      throw new ConfigError(`cannot use lock ${name}: ${(error as Error).message}`);
    }
  }

  let progress: Progress | null = null;
  // The console carries text tests control: GitHub must not read it as workflow commands until they resume.
  const github = githubActive(inputs.settings, inputs.env);
  const resumeToken = randomHex(16);
  if (github) stdout(`::stop-commands::${resumeToken}`);
  let resumed = !github;
  const resume = () => {
    if (!resumed) stdout(`::${resumeToken}::`);
    resumed = true;
  };
  try {
    const run = new Run({
      ...inputs,
      redact,
      out: { line: (text) => (progress ? progress.out.line(redact(text)) : stdout(text)) },
      beforeSummary: () => {
        progress?.stop();
        progress = null;
      },
    });
    current = run;
    progress = startProgress({
      write,
      isTTY: host.isTTY ?? false,
      ...(host.columns ? { columns: host.columns } : {}),
      heartbeatMs: inputs.settings.heartbeatMs,
      redact,
      noColor: Boolean(host.env.NO_COLOR),
      source: run.progressSource(),
    });
    const result = await run.start();
    resume();
    publishToGithub(result.report, inputs.settings, inputs.env, redact, stdout);
    return { exitCode: result.exitCode, report: result.report };
  } finally {
    (progress as Progress | null)?.stop();
    resume();
    await lock?.release();
    // Embedders run more than once: a finished run must not keep swallowing Ctrl-C.
    unsubscribe?.();
  }
}
