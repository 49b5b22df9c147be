/** The history's rows from a final report (docs/history.md, "Schema"): what a run and each of its tests leave. */
import { spawnSync } from "node:child_process";
import type { RunReport, ShardResult, TestResult } from "../results/report-model.ts";
import type { RunRow, TestRow } from "./schema.ts";

/** The commit a run tested: from CI's variables, else from git in the root; null parts where unknown. */
export interface GitInfo {
  sha: string | null;
  branch: string | null;
  /** The repository's default branch; null: unknown (then main and master count as default). */
  defaultBranch: string | null;
}

/** Statuses that say the test ran and did not pass. */
export const BAD_STATUSES: ReadonlySet<string> = new Set(["failed", "timed-out", "crashed"]);
/** Statuses that say the test ran to a verdict. */
export const DECISIVE_STATUSES: ReadonlySet<string> = new Set(["passed", ...BAD_STATUSES]);

const FAILURE_LINE_CHARS = 200;

/** git's answer to `args` in `root`, trimmed; null when git fails or is missing. */
function git(root: string, args: string[]): string | null {
  const r = spawnSync("git", args, { cwd: root, encoding: "utf8", timeout: 5000 });
  const text = r.status === 0 ? r.stdout.trim() : "";
  return text === "" ? null : text;
}

/** {@link GitInfo} of `root`: GITHUB_SHA / GITHUB_HEAD_REF / GITHUB_REF_NAME first, SHARDGUARD_DEFAULT_BRANCH. */
export function gitInfo(root: string, env: Record<string, string | undefined>): GitInfo {
  const sha = env.GITHUB_SHA || git(root, ["rev-parse", "HEAD"]);
  const branch =
    env.GITHUB_HEAD_REF || env.GITHUB_REF_NAME || (sha === null ? null : git(root, ["branch", "--show-current"]));
  const originHead = sha === null ? null : git(root, ["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]);
  const defaultBranch = env.SHARDGUARD_DEFAULT_BRANCH || (originHead?.replace(/^origin\//, "") ?? null);
  return { sha: sha || null, branch, defaultBranch };
}

/** The run's row; `source` says how it came: "run" or "import". */
export function runRow(report: RunReport, git: GitInfo, source: "run" | "import"): RunRow {
  const t = report.summary.tests;
  return {
    run_id: report.runId,
    started_at: report.startedAt,
    finished_at: report.finishedAt,
    exit_code: report.exitCode,
    completed: report.completed ? 1 : 0,
    bun_version: report.bun.version,
    git_sha: git.sha,
    git_branch: git.branch,
    default_branch: git.defaultBranch,
    slice: report.slice ? `${report.slice.index}/${report.slice.count}` : null,
    preset: report.preset?.name ?? null,
    tier: report.preset?.tier ?? null,
    settings: JSON.stringify(report.settings),
    tests_total: t.passed + t.failed + t["timed-out"] + t.crashed,
    tests_bad: t.failed + t["timed-out"] + t.crashed,
    source,
  };
}

/** One row per test of the report, synthetic whole-file entries included (a load error is an outcome too). */
export function testRows(report: RunReport): TestRow[] {
  const rows: TestRow[] = [];
  for (const shard of report.shards) for (const test of shard.tests) rows.push(testRow(report.runId, shard, test));
  return rows;
}

/** One test's row; the shard's resources are its process tree's, shared by the tests it ran. */
function testRow(runId: string, shard: ShardResult, test: TestResult): TestRow {
  const r = shard.resources;
  const cpu = r && r.cpuUserMs !== null && r.cpuSystemMs !== null ? r.cpuUserMs + r.cpuSystemMs : null;
  const cost = test.cost?.usd;
  return {
    run_id: runId,
    file: test.file,
    name: test.name,
    status: test.status,
    attempts: test.retries + 1,
    duration_ms: test.durationMs,
    failure_kind: test.failure?.type ?? null,
    failure_line: test.failure ? firstLine(test.failure.message) : null,
    shard_wall_ms: r?.wallMs ?? null,
    shard_cpu_ms: cpu,
    shard_peak_rss: r?.peakRssBytes ?? null,
    cost_usd: typeof cost === "number" && Number.isFinite(cost) ? cost : null,
    quarantined: test.quarantined ? 1 : 0,
  };
}

/** The first non-blank line of a message, cut to a bounded length. */
export function firstLine(message: string): string {
  const line = message.split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > FAILURE_LINE_CHARS ? `${line.slice(0, FAILURE_LINE_CHARS - 1)}…` : line;
}

/** The test's key in quarantine lists and history answers: `file > name`. */
export function testKey(file: string, name: string): string {
  return `${file} > ${name}`;
}
