#!/usr/bin/env bun
/**
 * fake-agent: a stand-in for a paid LLM agent CLI, so the example suite costs nothing and
 * behaves the same on every run.
 *
 * It streams newline-delimited JSON events to stdout, slowly, the way real agent CLIs do in
 * their "stream-json" modes, then exits. Everything it prints is a pure function of its
 * arguments (no clock, no randomness), so test outcomes depend only on the test file.
 *
 * Usage: fake-agent.ts [options] <prompt>
 *   --delay-ms N     pause before each streamed line (default 40)
 *   --lines N        number of "thinking" lines streamed before the result (default 5)
 *   --fail           end with an error result and exit code 1
 *   --rate-limited   answer nothing: emit an HTTP 429 error event and exit code 2
 *   --linger-ms N    after the result, stay alive N ms before exiting (an agent that keeps
 *                    flushing telemetry or serving a tool server after it has answered)
 *
 * Exit codes: 0 answered, 1 --fail, 2 --rate-limited, 64 bad usage.
 */

interface Options {
  prompt: string;
  delayMs: number;
  lines: number;
  fail: boolean;
  rateLimited: boolean;
  lingerMs: number;
}

const USAGE_EXIT = 64;

function usage(message: string): never {
  process.stderr.write(
    `fake-agent: ${message}\nusage: fake-agent.ts [--delay-ms N] [--lines N] [--fail] [--rate-limited] [--linger-ms N] <prompt>\n`,
  );
  process.exit(USAGE_EXIT);
}

function parseCount(flag: string, raw: string | undefined): number {
  const value = Number(raw);
  if (raw === undefined || !Number.isInteger(value) || value < 0) {
    usage(`${flag} needs a non-negative integer, got ${raw ?? "nothing"}`);
  }
  return value;
}

function parseArgs(argv: readonly string[]): Options {
  const options: Options = { prompt: "", delayMs: 40, lines: 5, fail: false, rateLimited: false, lingerMs: 0 };
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    switch (arg) {
      case "--delay-ms":
        options.delayMs = parseCount(arg, argv[++i]);
        break;
      case "--lines":
        options.lines = parseCount(arg, argv[++i]);
        break;
      case "--linger-ms":
        options.lingerMs = parseCount(arg, argv[++i]);
        break;
      case "--fail":
        options.fail = true;
        break;
      case "--rate-limited":
        options.rateLimited = true;
        break;
      default:
        if (arg.startsWith("--")) usage(`unknown option ${arg}`);
        words.push(arg);
    }
  }
  options.prompt = words.join(" ").trim();
  if (options.prompt === "") usage("missing prompt");
  return options;
}

/**
 * The agent's "knowledge". Deliberately small and deliberately wrong about Australia, so a
 * test can show a real expected-vs-received assertion failure without any randomness.
 */
function answer(prompt: string): string {
  const sum = /(-?\d+)\s*\+\s*(-?\d+)/.exec(prompt);
  if (sum) return String(Number(sum[1]) + Number(sum[2]));

  const capital = /capital of (\w+)/i.exec(prompt);
  if (capital) {
    const capitals: Record<string, string> = { france: "Paris", japan: "Tokyo", australia: "Sydney" };
    return capitals[capital[1]!.toLowerCase()] ?? "I am not sure.";
  }

  const summarize = /^summari[sz]e:\s*([\s\S]*)$/i.exec(prompt);
  if (summarize) {
    // "Summary" = the first sentence, which is what a terse model tends to return anyway.
    const text = summarize[1]!.trim();
    const first = /^[^.!?]*[.!?]?/.exec(text)?.[0] ?? text;
    return first.trim();
  }

  return "I don't know.";
}

// One write per event: a consumer reading the pipe sees each event as soon as it is produced.
function emit(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  // A stable id derived from the prompt, so two runs of the same call print the same bytes.
  const session = `fake-${Bun.hash(options.prompt).toString(16).slice(0, 8)}`;

  emit({ type: "system", subtype: "init", session, model: "fake-1", prompt: options.prompt });

  if (options.rateLimited) {
    await Bun.sleep(options.delayMs);
    emit({ type: "error", status: 429, message: "rate limit exceeded, retry after 1 s", session });
    return 2;
  }

  for (let step = 1; step <= options.lines; step++) {
    await Bun.sleep(options.delayMs);
    emit({ type: "assistant", subtype: "thinking", step, of: options.lines, text: `step ${step} of ${options.lines}` });
  }

  await Bun.sleep(options.delayMs);
  if (options.fail) {
    emit({ type: "result", subtype: "error", session, error: "tool call failed: sandbox refused the command" });
    return 1;
  }
  emit({ type: "result", subtype: "success", session, result: answer(options.prompt), num_turns: 1 });

  // Lingering happens after the answer on purpose: the caller already has what it wanted and
  // may well stop listening, which is exactly how agent processes get leaked.
  if (options.lingerMs > 0) await Bun.sleep(options.lingerMs);
  return 0;
}

// Not a top-level await: this file is a script, not a module, and has nothing to export.
void main().then((code) => {
  process.exitCode = code;
});
