/**
 * The GitHub CLI calls behind `shardguard bg --dispatch` and
 * `shardguard status CI_RUN_ID`. Remote state is read with `gh api` only,
 * never with a git fetch (a fetch would change the checkout's refs behind
 * the user's back). Every call goes through one {@link GhRunner}, so tests
 * can count and record them (and put a fake `gh` first on PATH).
 */
import { runTool, type ToolResult } from "./detach.ts";

/** Runs `gh ARGS...` and returns its status and output. */
export type GhRunner = (args: readonly string[]) => ToolResult;

/** A {@link GhRunner} running the `gh` found on the PATH of `env`, in `cwd`. */
export function ghRunner(cwd: string, env: Record<string, string | undefined>): GhRunner {
  return (args) => runTool("gh", args, { cwd, env, timeoutMs: 60_000 });
}

/** A workflow run as `gh run list/view --json` prints it (the fields shardguard asks for). */
export interface CiRun {
  databaseId: number;
  displayTitle: string;
  status: string;
  conclusion: string | null;
  url: string;
  event: string;
  headSha?: string;
}

/** Fields requested from `gh run list` and `gh run view`. */
export const CI_RUN_FIELDS = "databaseId,displayTitle,status,conclusion,url,event,headSha";

/** True when gh is installed and `gh auth status` succeeds. */
export function ghAuthenticated(gh: GhRunner): boolean {
  return gh(["auth", "status"]).status === 0;
}

/** Whether the authenticated account may push to `repo` (owner/name); false when gh cannot tell. */
export function ghCanPush(gh: GhRunner, repo: string): boolean {
  return gh(["api", `repos/${repo}`, "--jq", ".permissions.push"]).stdout.trim() === "true";
}

/** The commit sha of `branch` on `repo`, null when the branch is absent there (or gh failed). */
export function ghBranchHead(gh: GhRunner, repo: string, branch: string): string | null {
  const out = gh(["api", `repos/${repo}/branches/${encodeURIComponent(branch)}`, "--jq", ".commit.sha"]);
  const sha = out.stdout.trim();
  return out.status === 0 && /^[0-9a-f]{40}$/.test(sha) ? sha : null;
}

/**
 * `gh workflow run WORKFLOW --repo REPO --ref REF -f NAME=VALUE...`.
 *
 * @returns null when gh accepted the dispatch, else gh's error text
 */
export function ghWorkflowRun(
  gh: GhRunner,
  o: { repo: string; workflow: string; ref: string; inputs: Record<string, string> },
): string | null {
  const fields = Object.entries(o.inputs).flatMap(([name, value]) => ["-f", `${name}=${value}`]);
  const out = gh(["workflow", "run", o.workflow, "--repo", o.repo, "--ref", o.ref, ...fields]);
  return out.status === 0
    ? null
    : out.stderr.trim() || out.stdout.trim() || `gh exited ${out.status ?? "without a status"}`;
}

/** Recent workflow_dispatch runs of one workflow; null when gh could not list them (unknown, never "none"). */
export function ghDispatchRuns(gh: GhRunner, repo: string, workflow: string, limit = 50): CiRun[] | null {
  const out = gh([
    "run",
    "list",
    "--repo",
    repo,
    "--workflow",
    workflow,
    "--event",
    "workflow_dispatch",
    "--limit",
    String(limit),
    "--json",
    CI_RUN_FIELDS,
  ]);
  if (out.status !== 0) return null;
  try {
    const parsed: unknown = JSON.parse(out.stdout);
    return Array.isArray(parsed) ? (parsed as CiRun[]) : null;
  } catch {
    return null;
  }
}

/** One run's state; null when gh failed or printed something else (a transient failure: ask again). */
export function ghRunView(gh: GhRunner, repo: string, id: number | string): CiRun | null {
  const out = gh(["run", "view", String(id), "--repo", repo, "--json", CI_RUN_FIELDS]);
  if (out.status !== 0) return null;
  try {
    const parsed = JSON.parse(out.stdout) as Partial<CiRun>;
    return typeof parsed.status === "string" ? (parsed as CiRun) : null;
  } catch {
    return null;
  }
}
