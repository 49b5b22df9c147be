/** Publishing to GitHub Actions (workflow commands, step summary), rendered by report/github-render.ts. */
import { spawnSync } from "node:child_process";
import { appendFileSync } from "node:fs";
import path from "node:path";
import type { RunSettings } from "../config/settings-schema.ts";
import type { RunReport } from "../results/report-model.ts";
import { githubAnnotations, githubRefusal, githubStepSummary } from "../report/github-render.ts";

/** True when annotations are on (`--annotations`, default on) and the run is under GitHub Actions. */
export function githubActive(
  settings: Pick<RunSettings, "annotations">,
  env: Record<string, string | undefined>,
): boolean {
  return settings.annotations && env.GITHUB_ACTIONS === "true";
}

/** The root annotations are relative to: GITHUB_WORKSPACE, else the git top level of `root`, else `root`. */
export function repositoryRoot(root: string, env: Record<string, string | undefined>): string {
  if (env.GITHUB_WORKSPACE) return path.resolve(env.GITHUB_WORKSPACE);
  const git = spawnSync("git", ["rev-parse", "--show-toplevel"], { cwd: root, encoding: "utf8", timeout: 5000 });
  const top = git.status === 0 ? git.stdout.trim() : "";
  return top !== "" ? top : root;
}

/** Appends `markdown` to $GITHUB_STEP_SUMMARY when it is set; a failure costs one console line, never the run. */
function appendSummary(
  markdown: string,
  env: Record<string, string | undefined>,
  stdout: (text: string) => void,
): void {
  const file = env.GITHUB_STEP_SUMMARY;
  if (!file) return;
  try {
    appendFileSync(file, markdown);
  } catch (error) {
    stdout(`shardguard: could not append to GITHUB_STEP_SUMMARY: ${(error as Error).message}`);
  }
}

/**
 * Prints a workflow command per test that did not pass or was flaky and appends the step summary, when
 * {@link githubActive}.
 * @param redact the run's redactor (messages and names pass through it)
 */
export function publishToGithub(
  report: RunReport,
  settings: RunSettings,
  env: Record<string, string | undefined>,
  redact: (text: string) => string,
  stdout: (text: string) => void,
): void {
  if (!githubActive(settings, env)) return;
  const options = {
    repoRoot: repositoryRoot(settings.root, env),
    redact,
    reports: { junit: settings.junit, json: settings.json, ctrf: settings.ctrf, html: settings.html },
  };
  for (const line of githubAnnotations(report, options)) stdout(line);
  appendSummary(githubStepSummary(report, options), env, stdout);
}

/** The refused-run counterpart of {@link publishToGithub}; `reason` must already be redacted. */
export function publishRefusal(
  reason: string,
  settings: RunSettings,
  env: Record<string, string | undefined>,
  stdout: (text: string) => void,
): void {
  if (!githubActive(settings, env)) return;
  const { annotation, summary } = githubRefusal(reason);
  stdout(annotation);
  appendSummary(summary, env, stdout);
}
