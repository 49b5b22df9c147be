/**
 * Live progress while shards run: on a TTY a status area redrawn under the log lines; without one (CI) a heartbeat
 * line per long-running shard naming its test in flight, so a wedge can be diagnosed from a CI log alone.
 */
import type { ConsoleOut } from "./console.ts";
import { oneLine, secs } from "../util/format.ts";

/** Minimum time between two redraws of the TTY status area, ms. */
export const REDRAW_MS = 250;

/** What progress needs to know about one running shard. */
export interface ProgressShard {
  index: number;
  files: string[];
  /** ms since the shard's process started. */
  elapsedMs(): number;
  /** The test in flight and how long it has run (ms), when events tell. */
  inFlight(): { name: string; forMs: number } | null;
  /** True once the shard's process group was signalled (grace period running). */
  stopping?(): boolean;
}

/** Counts and running shards, read at each redraw or heartbeat. */
export interface ProgressSource {
  total: number;
  done(): number;
  running(): ProgressShard[];
}

/** Options of {@link startProgress}. */
export interface ProgressOptions {
  /** Writes raw text to stdout (no newline added). */
  write: (text: string) => void;
  isTTY: boolean;
  /** Terminal width in columns, for cutting lines on a TTY. */
  columns?: number;
  heartbeatMs: number;
  /** Applied to test names before any line is cut to the terminal width (secrets). */
  redact?: (text: string) => string;
  /** NO_COLOR set: no escape sequences other than cursor movement. */
  noColor: boolean;
  source: ProgressSource;
}

/** A running progress display; `out` prints log lines above it. */
export interface Progress {
  out: ConsoleOut;
  stop(): void;
}

/** Describes the test in flight of a shard, or that none is known. */
function flightText(shard: ProgressShard, redact: (text: string) => string = (t) => t): string {
  const flight = shard.inFlight();
  return flight ? `in flight: ${oneLine(redact(flight.name))} (${secs(flight.forMs)})` : "no test in flight reported";
}

/** Starts the progress display; call {@link Progress.stop} before printing the final summary. */
export function startProgress(options: ProgressOptions): Progress {
  return options.isTTY ? ttyProgress(options) : ciProgress(options);
}

function ciProgress(options: ProgressOptions): Progress {
  const lastBeat = new Map<number, number>();
  const tick = () => {
    for (const shard of options.source.running()) {
      const elapsed = shard.elapsedMs();
      const beats = Math.floor(elapsed / options.heartbeatMs);
      if (beats < 1 || (lastBeat.get(shard.index) ?? 0) >= beats) continue;
      lastBeat.set(shard.index, beats);
      const label = shard.stopping?.() ? "STOPPING" : "RUNNING";
      options.write(
        `[${shard.index}/${options.source.total}] ${label} ${secs(elapsed)} ${oneLine(shard.files.join(" "))}: ` +
          `${flightText(shard, options.redact)}\n`,
      );
    }
  };
  // Checked four times per period, so a beat is at most a quarter period late.
  const timer = setInterval(tick, Math.min(1_000, options.heartbeatMs / 4));
  timer.unref?.();
  return { out: { line: (text) => options.write(`${text}\n`) }, stop: () => clearInterval(timer) };
}

function ttyProgress(options: ProgressOptions): Progress {
  let drawn = 0;
  let stopped = false;
  const color = (code: string, text: string) => (options.noColor ? text : `\x1b[${code}m${text}\x1b[0m`);
  const width = Math.max(40, options.columns ?? 100);
  const cut = (text: string) => (text.length > width - 1 ? `${text.slice(0, width - 2)}…` : text);
  const clear = () => {
    // Cursor up to the area's first line, then erase to the end of the screen.
    // "\r" first: a "^C" echoed by the terminal leaves the cursor mid-line.
    if (drawn > 0) options.write(`\r\x1b[${drawn}A\x1b[0J`);
    drawn = 0;
  };
  const draw = () => {
    if (stopped) return;
    const running = options.source.running();
    const done = options.source.done();
    const queued = Math.max(0, options.source.total - done - running.length);
    const lines = [color("1", `shards: ${done} done, ${running.length} running, ${queued} queued`)];
    for (const shard of running) {
      const stopping = shard.stopping?.() ? color("33", " stopping") : "";
      lines.push(
        cut(
          `  [${shard.index}] ${secs(shard.elapsedMs()).padStart(7)}${stopping} ${oneLine(shard.files.join(" "))}  ` +
            `${color("2", flightText(shard, options.redact))}`,
        ),
      );
    }
    clear();
    options.write(`${lines.join("\n")}\n`);
    drawn = lines.length;
  };
  const timer = setInterval(draw, REDRAW_MS);
  timer.unref?.();
  return {
    out: {
      line: (text) => {
        clear();
        options.write(`${text}\n`);
        draw();
      },
    },
    stop: () => {
      clearInterval(timer);
      clear();
      stopped = true;
    },
  };
}
