/**
 * Runs a plan with live progress and signal handling: shared by
 * `shardguard run` and the preset preload.
 */
import { startProgress, type Progress } from "../report/progress.ts";
import { Run, type RunInputs, type RunResult } from "../run.ts";
import type { CliHost } from "./main.ts";

/**
 * Starts a {@link Run} of `inputs`, shows progress on `host`, wires SIGINT /
 * SIGTERM to cancellation, and resolves with the run's result.
 */
export async function executeRun(inputs: Omit<RunInputs, "out" | "beforeSummary">, host: CliHost): Promise<RunResult> {
  let progress: Progress | null = null;
  const run = new Run({
    ...inputs,
    out: { line: (text) => (progress ? progress.out.line(text) : host.stdout(text)) },
    beforeSummary: () => {
      progress?.stop();
      progress = null;
    },
  });
  progress = startProgress({
    write: host.write ?? ((text) => host.stdout(text.replace(/\n$/, ""))),
    isTTY: host.isTTY ?? false,
    ...(host.columns ? { columns: host.columns } : {}),
    heartbeatMs: inputs.settings.heartbeatMs,
    noColor: Boolean(host.env.NO_COLOR),
    source: run.progressSource(),
  });
  host.onSignal((signal) => run.cancel(signal));
  try {
    return await run.start();
  } finally {
    (progress as Progress | null)?.stop();
  }
}
