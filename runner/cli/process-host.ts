/**
 * The {@link Host} of a real process: its environment, working directory,
 * stdout/stderr and signals. Shared by the `shardguard` entry and the preset
 * preload; kept free of heavy imports because the preload loads it in every
 * plain `bun test` run.
 */
import type { Host } from "../app/host.ts";

/** A host backed by `process`. `onSignal` returns a function that removes the handlers again. */
export function processHost(): Host {
  return {
    env: process.env,
    cwd: process.cwd(),
    stdout: (text) => process.stdout.write(text + "\n"),
    stderr: (text) => process.stderr.write(text + "\n"),
    write: (text) => process.stdout.write(text),
    isTTY: Boolean(process.stdout.isTTY),
    ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
    onSignal: (handler) => {
      const onInt = () => handler("SIGINT");
      const onTerm = () => handler("SIGTERM");
      process.on("SIGINT", onInt);
      process.on("SIGTERM", onTerm);
      return () => {
        process.off("SIGINT", onInt);
        process.off("SIGTERM", onTerm);
      };
    },
  };
}
