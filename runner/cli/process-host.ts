/** The {@link Host} of a real process, light: the preload loads it in every plain `bun test` run. */
import type { Host } from "../engine/host.ts";

/** A write that stops once `stream` failed (EPIPE thrown or emitted): a gone reader costs the console only. */
function writerTo(stream: NodeJS.WriteStream): (text: string) => void {
  let broken = false;
  stream.on("error", () => {
    broken = true;
  });
  return (text) => {
    if (broken) return;
    try {
      stream.write(text);
    } catch {
      broken = true;
    }
  };
}

/** A host backed by `process`. `onSignal` returns a function that removes the handlers again. */
export function processHost(): Host {
  const out = writerTo(process.stdout);
  const err = writerTo(process.stderr);
  return {
    env: process.env,
    cwd: process.cwd(),
    stdout: (text) => out(`${text}\n`),
    stderr: (text) => err(`${text}\n`),
    write: (text) => out(text),
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
