/**
 * Can this checkout be dispatched? A dispatched run tests what is on GitHub, so the checkout must be exactly that
 * (docs/background.md, "Dispatch"); each failing rule is a reason, and any reason keeps the run local.
 */
import path from "node:path";
import { runTool } from "../../exec/detach.ts";
import { ghAuthenticated, ghBranchHead, ghCanPush, type GhRunner } from "../../exec/gh.ts";

/** What the rules look at. */
export interface CheckoutFacts {
  /** HEAD's sha; null outside a git checkout. */
  sha: string | null;
  /** Current branch; null when HEAD is detached. */
  branch: string | null;
  /** `git status --porcelain --untracked-files=all` lines. */
  dirty: string[];
  /** owner/name of origin on github.com; null when there is no such remote. */
  origin: string | null;
  /** The repository dispatches go to (--repo, else the preset's, else origin). */
  repo: string | null;
  ghReady: boolean;
  canPush: boolean;
  /** The branch's head on `repo` (gh api); null when absent or unknown. */
  remoteSha: string | null;
  /** False outside a git work tree. */
  inGit: boolean;
}

/** owner/name from a GitHub remote URL (https, ssh or git@), null for anything else. */
export function githubRepoOf(url: string): string | null {
  return /github\.com[:/]([^/\s]+\/[^/\s]+?)(?:\.git)?\/?$/.exec(url.trim())?.[1] ?? null;
}

/**
 * Gathers the facts with git and gh, asking gh nothing more once it is not ready.
 *
 * @param gh null to ask gh nothing (a `--local` run needs only the local facts)
 * @param configured the repository dispatches go to (--repo or the preset's); null: origin's
 * @param outDir shardguard's output directory: files under it do not count as uncommitted
 */
export function gatherFacts(
  root: string,
  env: Record<string, string | undefined>,
  gh: GhRunner | null,
  configured: string | null,
  outDir: string | null = null,
): CheckoutFacts {
  const git = (...args: string[]) => runTool("git", args, { cwd: root, env, timeoutMs: 30_000 });
  const head = git("rev-parse", "--verify", "HEAD");
  const sha = head.status === 0 ? head.stdout.trim() : null;
  const branch = git("symbolic-ref", "--quiet", "--short", "HEAD").stdout.trim() || null;
  const inside = git("rev-parse", "--is-inside-work-tree").stdout.trim() === "true";
  const status = inside ? git("status", "--porcelain", "--untracked-files=all") : null;
  const lines =
    status === null
      ? []
      : status.status === 0
        ? status.stdout.split("\n").filter((l) => l.length > 0)
        : ["(git status failed)"];
  // shardguard's own output (reports, bg logs) never makes the tree dirty.
  const top = inside ? git("rev-parse", "--show-toplevel").stdout.trim() : "";
  const outRel = outDir && top ? path.relative(top, outDir) : "";
  const ours = outRel && !outRel.startsWith("..") ? `${outRel.split(path.sep).join("/")}/` : null;
  const dirty = ours ? lines.filter((l) => !l.slice(3).replace(/^"|"$/g, "").startsWith(ours)) : lines;
  const origin = githubRepoOf(git("config", "--get", "remote.origin.url").stdout);
  const repo = configured ?? origin;
  const ghReady = gh !== null && ghAuthenticated(gh);
  const canPush = ghReady && repo !== null && origin === repo && ghCanPush(gh!, repo);
  const remoteSha = ghReady && repo !== null && origin === repo && branch ? ghBranchHead(gh!, repo, branch) : null;
  return { sha, branch, dirty, origin, repo, ghReady, canPush, remoteSha, inGit: inside };
}

/** Every reason the checkout cannot be dispatched, one line each; empty when it can. */
export function dispatchBlockers(f: CheckoutFacts): string[] {
  const reasons: string[] = [];
  const short = (s: string) => s.slice(0, 12);
  if (!f.ghReady) reasons.push("gh is not installed or not authenticated (gh auth status)");
  if (f.repo === null)
    reasons.push(
      "no repository to dispatch to: origin is not on github.com and neither --repo nor the preset names one",
    );
  else if (f.origin !== f.repo)
    reasons.push(
      `origin is ${f.origin ?? "not a GitHub repository"}, not ${f.repo} (a fork cannot dispatch the configured ` +
        `repository's workflows)`,
    );
  else if (f.ghReady && !f.canPush)
    reasons.push(`the gh account cannot push to ${f.repo}, so it cannot dispatch its workflows`);
  if (!f.inGit) reasons.push("not a git checkout");
  else if (f.sha === null) reasons.push("no commit to test");
  else if (f.branch === null) reasons.push(`HEAD ${short(f.sha)} is detached; dispatch needs a pushed branch`);
  else if (f.ghReady && f.repo !== null && f.origin === f.repo) {
    if (f.remoteSha === null) reasons.push(`branch ${f.branch} is not on ${f.repo}; push it`);
    else if (f.remoteSha !== f.sha)
      reasons.push(
        `HEAD ${short(f.sha)} is not the head of ${f.repo}:${f.branch} (${short(f.remoteSha)}); push or pull`,
      );
  }
  if (f.dirty.length > 0)
    reasons.push(
      `${f.dirty.length} file${f.dirty.length === 1 ? " is" : "s are"} modified, staged or untracked; commit or ` +
        `stash ${f.dirty.length === 1 ? "it" : "them"}`,
    );
  return reasons;
}

/** The tested revision for a log header: `<sha>` or `<sha> + N uncommitted files`. */
export function testedRevision(f: Pick<CheckoutFacts, "sha" | "dirty" | "inGit">): string {
  if (!f.inGit) return "(not a git checkout)";
  const sha = f.sha ?? "(no commit)";
  return f.dirty.length > 0 ? `${sha} + ${f.dirty.length} uncommitted file${f.dirty.length === 1 ? "" : "s"}` : sha;
}
