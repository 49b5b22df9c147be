/**
 * Test-side driver for the fake agent CLI: spawns it the way a paid-tier test would spawn a
 * real agent (a child process whose stdout is a stream of JSON events) and reads that stream.
 *
 * Two entry points, because real suites use both shapes:
 *   - runAgent(): run to completion and collect everything (the common, well-behaved case);
 *   - startAgent(): get a live session and read only as far as you need (which is how agent
 *     processes end up outliving the test that started them).
 */
import { join } from "node:path";

/** Absolute path of the fake agent script, resolved from this file so any cwd works. */
export const FAKE_AGENT = join(import.meta.dir, "..", "bin", "fake-agent.ts");

export interface AgentOptions {
  /** Pause before each streamed line; the main knob for how long a test takes. */
  delayMs?: number;
  /** How many "thinking" lines precede the result. */
  lines?: number;
  /** End with an error result and exit code 1. */
  fail?: boolean;
  /** Answer with an HTTP 429 error event and exit code 2. */
  rateLimited?: boolean;
  /** Stay alive this long after answering. */
  lingerMs?: number;
}

/** One line of the agent's stdout. Only `type` is guaranteed; the rest depends on it. */
export interface AgentEvent {
  type: string;
  subtype?: string;
  [field: string]: unknown;
}

export interface AgentRun {
  exitCode: number;
  events: AgentEvent[];
  /** The answer text, when the agent produced a successful result. */
  result: string | undefined;
  /** The error message, from an error result or an error event. */
  error: string | undefined;
  /** The HTTP-like status of an error event (429 for a rate limit). */
  status: number | undefined;
}

export function agentArgs(prompt: string, options: AgentOptions = {}): string[] {
  const args: string[] = [];
  if (options.delayMs !== undefined) args.push("--delay-ms", String(options.delayMs));
  if (options.lines !== undefined) args.push("--lines", String(options.lines));
  if (options.lingerMs !== undefined) args.push("--linger-ms", String(options.lingerMs));
  if (options.fail) args.push("--fail");
  if (options.rateLimited) args.push("--rate-limited");
  // "--" is not needed: the fake agent treats every non-option word as prompt text, and
  // prompts in this suite never start with "--".
  args.push(prompt);
  return args;
}

function parseEvent(line: string): AgentEvent {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new Error(`agent printed a line that is not JSON: ${JSON.stringify(line)}`);
  }
  if (typeof value !== "object" || value === null || typeof (value as { type?: unknown }).type !== "string") {
    throw new Error(`agent printed JSON without a string "type": ${line}`);
  }
  return value as AgentEvent;
}

/** A running agent whose event stream is read on demand, one event at a time. */
export class AgentSession {
  /** Every event read so far, in order. */
  readonly events: AgentEvent[] = [];
  readonly pid: number;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number>;

  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #pending = "";
  #eof = false;

  constructor(prompt: string, options: AgentOptions = {}) {
    const proc = Bun.spawn([process.execPath, FAKE_AGENT, ...agentArgs(prompt, options)], {
      stdin: "ignore",
      stdout: "pipe",
      // Inherited on purpose, as most suites do it: agent diagnostics land in the test log.
      // It also means the agent holds the test process's stderr open for as long as it lives.
      stderr: "inherit",
    });
    this.pid = proc.pid;
    this.exited = proc.exited;
    this.#reader = proc.stdout.getReader();
  }

  /** The next event, or undefined once stdout has closed. */
  async next(): Promise<AgentEvent | undefined> {
    for (;;) {
      const newline = this.#pending.indexOf("\n");
      if (newline >= 0 || (this.#eof && this.#pending !== "")) {
        const end = newline >= 0 ? newline : this.#pending.length;
        const line = this.#pending.slice(0, end);
        this.#pending = this.#pending.slice(end + 1);
        if (line.trim() === "") continue;
        const event = parseEvent(line);
        this.events.push(event);
        return event;
      }
      if (this.#eof) return undefined;
      const chunk = await this.#reader.read();
      if (chunk.done) {
        this.#eof = true;
        this.#pending += this.#decoder.decode();
      } else {
        this.#pending += this.#decoder.decode(chunk.value, { stream: true });
      }
    }
  }

  /**
   * Reads until the agent has given its outcome (a result or an error event) and returns it,
   * without waiting for the process to exit. Undefined if stdout closed first.
   */
  async outcome(): Promise<AgentEvent | undefined> {
    for (let event = await this.next(); event !== undefined; event = await this.next()) {
      if (event.type === "result" || event.type === "error") return event;
    }
    return undefined;
  }

  /** Reads to the end of stdout, waits for the exit code and summarises the run. */
  async finish(): Promise<AgentRun> {
    while ((await this.next()) !== undefined) {
      // Draining only; next() records every event in this.events.
    }
    const exitCode = await this.exited;
    return summarise(exitCode, this.events);
  }
}

function summarise(exitCode: number, events: AgentEvent[]): AgentRun {
  let result: string | undefined;
  let error: string | undefined;
  let status: number | undefined;
  for (const event of events) {
    if (event.type === "result" && event.subtype === "success" && typeof event.result === "string") {
      result = event.result;
    }
    if (event.type === "result" && typeof event.error === "string") error = event.error;
    if (event.type === "error") {
      if (typeof event.message === "string") error = event.message;
      if (typeof event.status === "number") status = event.status;
    }
  }
  return { exitCode, events, result, error, status };
}

/** Starts the agent and hands back the live session; the caller decides how much to read. */
export function startAgent(prompt: string, options: AgentOptions = {}): AgentSession {
  return new AgentSession(prompt, options);
}

/** Runs the agent to completion: every event, the exit code, the answer. */
export async function runAgent(prompt: string, options: AgentOptions = {}): Promise<AgentRun> {
  return startAgent(prompt, options).finish();
}
