/** `shardguard history`: questions over many runs, `history import DIR...` and `history prune --keep N`. */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { resolveHistorySettings, type HistoryTarget } from "../config/history-settings.ts";
import type { ParsedWithExtras } from "../config/args.ts";
import { readBunfigTable } from "../config/load.ts";
import { ConfigError } from "../config/settings-schema.ts";
import type { Host } from "../engine/host.ts";
import {
  ANSWER_CANDIDATES,
  failingAnswers,
  flakyAnswers,
  loadOutcomes,
  selectRuns,
  testsWhere,
  testsNamed,
  trendAnswers,
  type RunFilter,
  type TestRef,
} from "../history/queries.ts";
import { runRow, testKey, testRows } from "../history/rows.ts";
import { trendCandidates } from "../history/trend-candidates.ts";
import { openStore } from "../history/open.ts";
import type { HistoryStore } from "../history/store.ts";
import { EXIT } from "../results/codes.ts";
import { RunReportSchema, type RunReport } from "../results/report-model.ts";
import { historyText } from "./history-text.ts";

/** A question `history` answers. */
export type HistoryQuestion = "flaky" | "failing" | "slow" | "cost" | "runs" | "test";

/** What cli/history-args.ts parsed. */
export interface HistoryCommandInputs {
  action: "query" | "import" | "prune";
  question: HistoryQuestion;
  testName: string | null;
  json: boolean;
  filter: RunFilter;
  keep: number | null;
  /** Absolute paths for import. */
  sources: string[];
  /** `--history`; null: SHARDGUARD_HISTORY_URL, bunfig.toml, else OUT/history.sqlite. */
  history: string | null;
  root: string | null;
  out: string | null;
}

/** Entries per list of `--slow` and `--cost`. */
const TOP = 10;

/** Where the history is: the flag, the environment, bunfig.toml, else ROOT/.shardguard/history.sqlite. */
function historyTarget(inputs: HistoryCommandInputs, host: Host): HistoryTarget {
  const root = inputs.root ?? path.resolve(host.cwd, host.env.SHARDGUARD_ROOT || ".");
  const out = inputs.out ?? path.resolve(host.cwd, host.env.SHARDGUARD_OUT || path.join(root, ".shardguard"));
  const extras = new Map<string, string | true>(inputs.history === null ? [] : [["--history", inputs.history]]);
  const bunfig = existsSync(root) ? readBunfigTable(root) : { table: {}, file: null, testRoot: null, text: "" };
  const { target } = resolveHistorySettings({ extras } as ParsedWithExtras, host.env, {
    cwd: host.cwd,
    root,
    out,
    bunfig,
  });
  if (target === null)
    throw new ConfigError("history is turned off (--no-history, SHARDGUARD_NO_HISTORY or history = false)");
  return target;
}

/**
 * Runs one history action; prints its answer.
 * @returns 0, or 2 when the history cannot be opened or import finds no report
 * @throws ConfigError for bad input (exit 2)
 */
export async function historyCommand(inputs: HistoryCommandInputs, host: Host): Promise<number> {
  const target = historyTarget(inputs, host);
  if (target.kind === "sqlite" && inputs.action !== "import" && !existsSync(target.path))
    throw new ConfigError(`no history at ${target.path}: a run writes it, or shardguard history import DIR builds one`);
  let store: HistoryStore;
  try {
    store = await openStore(target);
  } catch (error) {
    throw new ConfigError(`cannot open the history: ${(error as Error).message}`);
  }
  try {
    if (inputs.action === "import") return await importReports(store, inputs.sources, host);
    if (inputs.action === "prune") {
      host.stdout(
        `shardguard: history prune: removed ${await store.prune(inputs.keep!)} runs, kept the newest ${inputs.keep}`,
      );
      return EXIT.ok;
    }
    const answer = await answerOf(store, inputs);
    if (inputs.json) host.stdout(JSON.stringify(answer, null, 2));
    else for (const line of historyText(inputs.question, answer)) host.stdout(line);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

/** True when `NAME` of `--test NAME` names the test: its full name, its key, or part of its name. */
function named(t: TestRef, name: string): boolean {
  return t.name === name || testKey(t.file, t.name) === name || t.name.includes(name);
}

/** The only tests whose rows the question (not `--runs`) needs; the others cannot be in its answer. */
async function candidatesOf(store: HistoryStore, inputs: HistoryCommandInputs): Promise<TestRef[]> {
  switch (inputs.question) {
    case "flaky":
    case "failing":
      return testsWhere(store, inputs.filter, ANSWER_CANDIDATES[inputs.question]);
    case "slow":
      return trendCandidates(store, inputs.filter, "duration_ms", TOP);
    case "cost":
      return trendCandidates(store, inputs.filter, "cost_usd", TOP);
    default:
      return testsNamed(store, (t) => named(t, inputs.testName!));
  }
}

/** The answer of the question asked, as the JSON it prints. */
async function answerOf(store: HistoryStore, inputs: HistoryCommandInputs): Promise<Record<string, unknown>> {
  const runs = await selectRuns(store, inputs.filter);
  const base = { runs: runs.length };
  if (inputs.question === "runs")
    return { ...base, list: runs.map((r) => ({ ...r, settings: JSON.parse(String(r.settings)) })) };
  const tests = await loadOutcomes(store, inputs.filter, await candidatesOf(store, inputs));
  switch (inputs.question) {
    case "flaky":
      return { ...base, flaky: flakyAnswers(tests) };
    case "failing":
      return { ...base, failing: failingAnswers(tests) };
    case "slow":
      return { ...base, ...trendAnswers(tests, (o) => o.durationMs, TOP) };
    case "cost":
      return { ...base, ...trendAnswers(tests, (o) => o.costUsd, TOP) };
    default: {
      const name = inputs.testName!;
      const matching = tests.filter((t) => named(t, name));
      return {
        ...base,
        tests: matching.map((t) => ({
          test: t.key,
          outcomes: t.outcomes.map((o) => ({
            runId: o.run.runId,
            startedAt: o.run.startedAt,
            status: o.status,
            attempts: o.attempts,
            durationMs: o.durationMs,
            failureLine: o.failureLine,
            sha: o.run.sha,
            branch: o.run.branch,
          })),
        })),
      };
    }
  }
}

/** report.json files under `source` (itself when a file), depth-first, sorted. */
function reportFiles(source: string): string[] {
  if (!existsSync(source))
    throw new ConfigError(`history import: ${source} does not exist; expected a DIR or report.json`);
  if (statSync(source).isFile()) return [source];
  const out: string[] = [];
  for (const entry of readdirSync(source, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const full = path.join(source, entry.name);
    if (entry.isDirectory() && entry.name !== "node_modules" && entry.name !== ".git") out.push(...reportFiles(full));
    else if (entry.isFile() && entry.name === "report.json") out.push(full);
  }
  return out;
}

/** Adds each final report found; a report seen before (same run id) is skipped, an unreadable one warned about. */
async function importReports(store: HistoryStore, sources: readonly string[], host: Host): Promise<number> {
  const files = sources.flatMap(reportFiles);
  if (files.length === 0) throw new ConfigError(`history import found no report.json under ${sources.join(", ")}`);
  let added = 0;
  let known = 0;
  for (const file of files) {
    let report: RunReport;
    try {
      report = RunReportSchema.parse(JSON.parse(readFileSync(file, "utf8")));
    } catch (error) {
      host.stderr(
        `shardguard: warning: history import: ${file} is not a shardguard report.json: ${(error as Error).message.split("\n")[0]}`,
      );
      continue;
    }
    if (report.exitCode === null) continue;
    const git = { sha: null, branch: null, defaultBranch: null };
    if (await store.append(runRow(report, git, "import"), testRows(report))) added++;
    else known++;
  }
  host.stdout(
    `shardguard: history import: ${added} runs added, ${known} already there, from ${files.length} report.json files`,
  );
  return EXIT.ok;
}
