/**
 * The guardian program (started by exec/guardian.ts, never imported):
 * `bun guardian-main.ts <cookie name> <cookie value prefix> <runner pid> <runner start time>`.
 * The cookie comes in two words: on macOS `ps eww` would read a `NAME=value` argument as an environment entry.
 * It reads "+ <pgid> <cgroup dir>", "- <pgid>" and "done" from a pipe only the runner writes to; at the pipe's
 * end without "done", or the runner gone, it kills the cookie's carriers and the listed groups (docs/architecture.md,
 * "Runner death").
 */
import { readProcStat } from "./proc-inspect.ts";
import { killLeftGroups, sweepCookie } from "./process.ts";

const [cookieName, cookieValue, runnerPidText, runnerStart] = process.argv.slice(2);
const cookiePrefix = `${cookieName}=${cookieValue}`;
const runnerPid = Number(runnerPidText);
const badArguments = !cookieName || !cookieValue || !Number.isInteger(runnerPid) || runnerPid <= 1;

const PROBE_MS = 250;
const SWEEP_GAP_MS = 50;
const SWEEP_BUDGET_MS = 2_000;

let finished = false;
let probe: ReturnType<typeof setInterval> | undefined;
/** The shards' process groups the runner has not reported gone, with their cgroup directories (null: none). */
const groups = new Map<number, string | null>();

/** Ends the guardian by leaving nothing on the event loop: exit codes, not process.exit, outside program entries. */
function finish(code: number): void {
  finished = true;
  process.exitCode = code;
  if (probe) clearInterval(probe);
  // Ends the pending read, which then ends the reading loop below.
  void pipe.cancel().catch(() => {});
}

/** The runner's pid is still the runner (not dead, not a zombie, not recycled). */
function runnerAlive(): boolean {
  const stat = readProcStat(runnerPid);
  if (stat === null) {
    // No /proc: fall back to a signal-0 probe.
    try {
      process.kill(runnerPid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  }
  return (
    stat.state !== "Z" &&
    stat.state !== "X" &&
    (runnerStart === undefined || runnerStart === "" || stat.start === runnerStart)
  );
}

async function cleanUp(): Promise<never> {
  if (finished) return new Promise<never>(() => {});
  finished = true;
  const until = performance.now() + SWEEP_BUDGET_MS;
  let quiet = 0;
  const listed = () => [...groups].map(([pgid, cgroup]) => ({ pgid, cgroup }));
  while (quiet < 2 && performance.now() < until) {
    const found = killLeftGroups(listed()) + sweepCookie(cookiePrefix!, "prefix").length;
    quiet = found === 0 ? quiet + 1 : 0;
    if (quiet < 2) await Bun.sleep(SWEEP_GAP_MS);
  }
  finish(0);
  return new Promise<never>(() => {});
}

// Bun's own stdin stream: Node's `process.stdin` costs setup CPU just as the run spawns (bench/README.md).
const pipe = Bun.stdin.stream().getReader();

/** Reads the pipe until "done" (the run ended) or its end (the runner died). */
async function readPipe(): Promise<void> {
  const decoder = new TextDecoder();
  let received = "";
  for (;;) {
    let chunk: Awaited<ReturnType<typeof pipe.read>>;
    try {
      chunk = await pipe.read();
    } catch {
      break;
    }
    if (finished) return;
    if (chunk.done) break;
    const lines = (received + decoder.decode(chunk.value, { stream: true })).split("\n");
    // A line is at most a pgid and a cgroup path (PATH_MAX): anything longer is not the runner's.
    received = lines.pop()!.slice(-8192);
    for (const line of lines) {
      if (line === "done") return finish(0);
      const m = /^([+-]) ([1-9]\d*)(?: (.*))?$/.exec(line);
      const pgid = m ? Number(m[2]) : 0;
      if (pgid <= 1) continue;
      if (m![1] === "+") groups.set(pgid, m![3] ? m![3] : null);
      else groups.delete(pgid);
    }
  }
  if (!finished) void cleanUp();
}

if (badArguments) {
  finish(2);
} else {
  void readPipe();
  probe = setInterval(() => {
    if (!runnerAlive()) void cleanUp();
  }, PROBE_MS);
}
