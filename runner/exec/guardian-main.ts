/**
 * The guardian program (started by exec/guardian.ts, never imported):
 * `bun guardian-main.ts <cookie name> <cookie value prefix> <runner pid> <runner start time>`.
 * The cookie comes in two arguments, never as one `NAME=value` word: on
 * macOS the sweeps read `ps eww`, where such an argument would look like an
 * environment entry and make the guardian a target of other runs' sweeps.
 *
 * It runs in a session of its own, holds the read end of a pipe whose write
 * end only the runner holds, and waits, reading lines: "+ <pgid> <cgroup
 * dir>" (a shard's process group started; the directory may be empty) and
 * "- <pgid>" (it and its cgroup were killed by the runner). Two endings:
 *  - the runner writes "done" (its run ended and its own end-of-run sweep
 *    ran): exit at once, touching nothing;
 *  - the pipe reaches end-of-file without "done", or the runner's pid is
 *    gone (checked every 250 ms, in case a stray copy of the pipe's write
 *    end keeps it open): the runner died without cleaning up (kill -9, OOM
 *    killer). Then every process carrying the run's cookie, and every
 *    process group and cgroup still listed, is SIGKILLed, again until two
 *    rounds in a row find nothing (a process may fork while it is being
 *    killed), for at most 2 s, and the guardian exits.
 */
import { readProcStat } from "./proc-inspect.ts";
import { killLeftGroups, sweepCookie } from "./process.ts";

const [cookieName, cookieValue, runnerPidText, runnerStart] = process.argv.slice(2);
const cookiePrefix = `${cookieName}=${cookieValue}`;
const runnerPid = Number(runnerPidText);
const badArguments = !cookieName || !cookieValue || !Number.isInteger(runnerPid) || runnerPid <= 1;

/** Between liveness probes of the runner, ms. */
const PROBE_MS = 250;
/** Between sweeps of one clean-up, ms. */
const SWEEP_GAP_MS = 50;
/** Longest clean-up, ms. */
const SWEEP_BUDGET_MS = 2_000;

let finished = false;
let probe: ReturnType<typeof setInterval> | undefined;
/** The shards' process groups the runner has not reported gone, with their cgroup directories (null: none). */
const groups = new Map<number, string | null>();

/**
 * Ends the guardian with `code` by leaving nothing on the event loop (the
 * probe timer, the pipe): exit codes, not process.exit, as everywhere but
 * the program entries (docs/architecture.md).
 */
function finish(code: number): void {
  finished = true;
  process.exitCode = code;
  if (probe) clearInterval(probe);
  // Ends the pending read, which then ends the reading loop below.
  void pipe.cancel().catch(() => {});
}

/** True while the runner's pid is the runner (not dead, not a zombie, not recycled). */
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

/**
 * The pipe from the runner, read through Bun's own stdin stream: Node's
 * `process.stdin` cost the guardian ~10 ms of CPU to set up, in the
 * moments its run spawns its first shards (bench/README.md).
 */
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
