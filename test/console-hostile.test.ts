/**
 * Text a test printed or named can neither start nor overwrite a line of
 * shardguard's output: not on the console (the log tail, failure messages,
 * test and file names, warnings, leftover commands, the CI heartbeat, the TTY
 * progress area), not in a GitHub annotation, not in the step summary. A
 * carriage return, backspace, VT, FF, NEL, U+2028/2029, the other C0 and C1
 * controls and a lone ESC are shown as visible characters; whole escape
 * sequences are removed. Every hostile text against every output path, then
 * one real run of a child that prints and names such text.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConsoleReporter } from "../runner/report/console-reporter.ts";
import { endLine, startLine, summaryLines } from "../runner/report/console.ts";
import { githubAnnotations, githubStepSummary } from "../runner/report/github-render.ts";
import { startProgress } from "../runner/report/progress.ts";
import type { ShardResult } from "../runner/results/report-model.ts";
import { makeSuite, readReport, removeSuites, runCli } from "./helpers/cli.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

afterAll(removeSuites);

const FORGED = "shardguard: FORGED";

/** [label, hostile text, what the output must hold instead (null: only that nothing forged a line)]. */
const HOSTILE: [string, string, string | null][] = [
  ["CR", `abc\r${FORGED}`, `abc\u240d${FORGED}`],
  ["CR LF", `abc\r\n${FORGED}`, null],
  ["LF", `abc\n${FORGED}`, null],
  ["LF then a workflow command", "abc\n::error::forged", null],
  ["CR then a workflow command", "abc\r::error::forged", "abc\u240d::error::forged"],
  ["backspaces", `abc\b\b\b${FORGED}`, `abc\u2408\u2408\u2408${FORGED}`],
  ["VT", `abc\x0b${FORGED}`, `abc\u240b${FORGED}`],
  ["FF", `abc\x0c${FORGED}`, `abc\u240c${FORGED}`],
  ["NUL", `abc\x00${FORGED}`, `abc\u2400${FORGED}`],
  ["BEL", `abc\x07${FORGED}`, `abc\u2407${FORGED}`],
  ["DEL", `abc\x7f${FORGED}`, `abc\u2421${FORGED}`],
  ["NEL", `abc\u0085${FORGED}`, `abc\\u0085${FORGED}`],
  ["U+2028", `abc\u2028${FORGED}`, `abc\\u2028${FORGED}`],
  ["U+2029", `abc\u2029${FORGED}`, `abc\\u2029${FORGED}`],
  ["right-to-left override", `abc\u202e${FORGED}`, `abc\\u202E${FORGED}`],
  ["lone ESC", `abc\x1b\x1b[2K${FORGED}`, `abc\u241b${FORGED}`],
  ["erase line and CR", `abc\x1b[2K\r${FORGED}`, `abc\u240d${FORGED}`],
  ["cursor up", `abc\x1b[1A${FORGED}`, `abc${FORGED}`],
  ["OSC title", `abc\x1b]0;pwned\x07${FORGED}`, `abc${FORGED}`],
  ["unterminated OSC", `abc\x1b]0;${FORGED}`, `abc0;${FORGED}`],
  ["8-bit CSI", `abc\x9b2K${FORGED}`, `abc${FORGED}`],
  ["8-bit OSC", `abc\x9d0;t\x9c${FORGED}`, `abc\\u009D0;t\\u009C${FORGED}`],
  ["reset (ESC c)", `abc\x1bc${FORGED}`, `abc${FORGED}`],
];

/** Characters no output may carry raw; a line feed only where the renderer itself breaks lines. */
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * The console lines of `text` that text from a test could have started: one
 * begins with the forged text or a workflow command.
 */
const forgedLines = (text: string) =>
  text.split("\n").filter((l) => l.trimStart().startsWith(FORGED) || l.trimStart().startsWith("::error::forged"));

/** A failed shard whose test, file, failure and log all hold `h`. */
function hostileShard(h: string, logPath: string | null): ShardResult {
  const file = `dir/${h}.test.ts`;
  const t = makeTest({ name: h, file, status: "failed", failure: { type: "failure", message: h } });
  return makeShard({
    index: 1,
    status: "failed",
    exitCode: 1,
    reason: "1 test failed",
    files: [file],
    tests: [t],
    logPath,
    leftovers: [{ pid: 4242, command: `sleep ${h}`, leftGroup: false }],
  });
}

/** Each output path: what it prints for hostile text `h` (`dir`: a temp directory for a log file). */
const PATHS: [string, (h: string, dir: string) => Promise<string> | string][] = [
  ["start line (file name)", (h) => startLine({ index: 1, slug: "s", files: [`${h}.test.ts`] }, 1, 1_000, "x.log")],
  [
    "end line (file, reason, test name, failure message)",
    (h) => endLine({ ...hostileShard(h, "x.log"), reason: h }, 1),
  ],
  [
    "shard end block (log tail, leftovers)",
    async (h, dir) => {
      const log = path.join(dir, "shard.log");
      writeFileSync(log, `bun test v1.4.4\n${h}\n(fail) x\n${h}`);
      const lines: string[] = [];
      await new ConsoleReporter({ line: (t) => lines.push(t) }).onShardEnd(hostileShard(h, log), 1);
      return lines.join("\n");
    },
  ],
  [
    "shard warning",
    (h) => {
      const lines: string[] = [];
      new ConsoleReporter({ line: (t) => lines.push(t) }).onShardWarning(
        { index: 1, slug: "s", files: ["a.test.ts"] },
        1,
        h,
      );
      return lines.join("\n");
    },
  ],
  ["summary", (h) => summaryLines(makeReport([hostileShard(h, "x.log")]), null).join("\n")],
  [
    "CI heartbeat",
    async (h) => {
      const written: string[] = [];
      const shard = {
        index: 1,
        files: [`${h}.test.ts`],
        elapsedMs: () => 5_000,
        inFlight: () => ({ name: h, forMs: 1_000 }),
      };
      const progress = startProgress({
        write: (t) => written.push(t),
        isTTY: false,
        heartbeatMs: 40,
        noColor: true,
        source: { total: 1, done: () => 0, running: () => [shard] },
      });
      await Bun.sleep(80);
      progress.stop();
      expect(written.length).toBeGreaterThan(0);
      return written.join("");
    },
  ],
  [
    "TTY progress area",
    (h) => {
      const written: string[] = [];
      const shard = {
        index: 1,
        files: [`${h}.test.ts`],
        elapsedMs: () => 5_000,
        inFlight: () => ({ name: h, forMs: 1_000 }),
      };
      const progress = startProgress({
        write: (t) => written.push(t),
        isTTY: true,
        columns: 300,
        heartbeatMs: 60_000,
        noColor: true,
        source: { total: 2, done: () => 0, running: () => [shard] },
      });
      progress.out.line("[2/2] START b.test.ts");
      progress.stop();
      // The area's own cursor movement is the only escape sequence allowed: take it out first.
      return written.join("").replace(/\r\x1b\[\d+A\x1b\[0J/g, "");
    },
  ],
];

describe("hostile text on every console path", () => {
  for (const [where, render] of PATHS) {
    for (const [label, h, shown] of HOSTILE) {
      test(`${where}: ${label}`, async () => {
        const out = await render(h, makeSuite({}));
        expect(out).not.toMatch(RAW);
        expect(forgedLines(out)).toEqual([]);
        if (shown !== null) expect(out).toContain(shown);
      });
    }
  }
});

/** Workflow commands as GitHub's runner splits its output: at CR or LF, then `::name props::data`. */
const runnerLines = (text: string) => text.split(/\r\n|\r|\n/);

describe("hostile text in GitHub annotations and the step summary", () => {
  for (const [label, h, shown] of HOSTILE) {
    test(`annotations: ${label}`, () => {
      const lines = githubAnnotations(makeReport([hostileShard(h, "x.log")]));
      expect(lines).toHaveLength(1);
      // One command, on one line as the runner reads lines, with nothing raw in it.
      expect(runnerLines(lines[0]!)).toHaveLength(1);
      expect(lines[0]).toMatch(/^::error file=dir\/.*,line=1,title=failed%3A /);
      expect(lines[0]).not.toMatch(RAW);
      if (shown !== null) expect(lines[0]).toContain(shown.replace(/:/g, "%3A"));
    });
    test(`step summary: ${label}`, () => {
      const summary = githubStepSummary(makeReport([hostileShard(h, "x.log")]));
      expect(summary).not.toMatch(RAW);
      expect(forgedLines(summary)).toEqual([]);
      // The failing test's row is one line of the table.
      const rows = summary.split("\n").filter((l) => l.startsWith("| failed | abc"));
      expect(rows).toHaveLength(1);
      if (shown !== null) expect(rows[0]).toContain(shown.replace(/[!-/:-@[-`{-~]/g, (c) => `\\${c}`));
    });
  }
});

describe("a real child that prints and names hostile text", () => {
  test("console, annotations and step summary show it and no line of it passes for shardguard's", async () => {
    const name = `carriage\r${FORGED} and \x1b[2K\rline\u2028sep\x0bvt\x07`;
    const dir = makeSuite({
      "hostile.test.ts": [
        `import { expect, test } from "bun:test";`,
        `test(${JSON.stringify(name)}, async () => {`,
        `  process.stdout.write("abc\\r${FORGED}\\n::error::forged\\nx` +
          `\\r::warning::forged\\nnel\\u0085${FORGED}\\n\\x1b]0;title\\x07bell\\x07\\b\\b\\n");`,
        `  await Bun.sleep(1_300);`,
        `  expect(1).toBe(2);`,
        `});`,
        ``,
      ].join("\n"),
    });
    const summaryFile = path.join(dir, "summary.md");
    const run = await runCli(["run", "--root", dir, "--heartbeat", "1", "--timeout", "30"], {
      env: { GITHUB_ACTIONS: "true", GITHUB_WORKSPACE: dir, GITHUB_STEP_SUMMARY: summaryFile },
    });
    expect(run.code).toBe(1);
    expect(readReport(dir).shards[0]!.tests.map((t) => t.status)).toEqual(["failed"]);
    const summary = readFileSync(summaryFile, "utf8");
    for (const text of [run.stdout, summary]) {
      expect(text).not.toMatch(RAW);
      expect(forgedLines(text)).toEqual([]);
    }
    // Every line GitHub's runner would read as a workflow command is shardguard's own.
    const commands = runnerLines(run.stdout).filter((l) => l.trimStart().startsWith("::"));
    expect(
      commands.filter(
        (l) => !/^::(stop-commands::[0-9a-f]{32}|[0-9a-f]{32}::|error file=hostile\.test\.ts,line=2,title=)/.test(l),
      ),
    ).toEqual([]);
    // The log tail, the test's name in the end line, the heartbeat and the annotation show what was there.
    expect(run.stdout).toContain(`    | abc\u240d${FORGED}`);
    expect(run.stdout).toContain(`    | nel\\u0085${FORGED}`);
    expect(run.stdout).toContain("    | bell\u2407\u2408\u2408");
    const shownName = `carriage\u240d${FORGED} and \u241b[2K\u240dline\\u2028sep\u240bvt\u2407`;
    expect(run.stdout).toContain(`failed        ${shownName}: `);
    const beat = run.stdout.split("\n").find((l) => l.startsWith("[1/1] RUNNING "));
    expect(beat).toEndWith(`hostile.test.ts: in flight: ${shownName} (${beat!.split(" (").pop()}`);
    expect(run.stdout).toContain(`title=failed%3A ${shownName.replace(/:/g, "%3A")}::`);
    expect(summary).toContain("carriage\u240dshardguard\\: FORGED and \u241b\\[2K\u240dline\\\\u2028sep\u240bvt\u2407");
  }, 60_000);
});
