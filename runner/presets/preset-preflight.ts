/**
 * The preset's preflight check: one check before any shard starts (an API
 * ping, a login check), so a dead dependency fails the run once, before
 * money is spent, instead of in every shard. After it passes, every child
 * gets the preset's ok variable (gstack: EVALS_PREFLIGHT_OK=1) and skips its
 * own check.
 *
 * Two forms: a command (argv), or a function export of a project module
 * (gstack's test/helpers/anthropic-preflight.ts exports
 * `preflightAnthropicApi(env)`), called in its own Bun process so it runs
 * under the same process-group supervision and timeout as a shard.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Preset } from "./preset-schema.ts";

/** What the preflight of a run is: a process to run, or why there is none. */
export type PreflightPlan =
  | { argv: string[]; label: string; timeoutMs: number; okEnv: string | null }
  | { none: string };

/**
 * Decides the preflight of a run. A configured `command` wins; otherwise a
 * configured module that exists in `root` is called through `bun -e`.
 *
 * @param bun the Bun executable of the run (absolute path)
 */
export function planPreflight(preset: Preset, root: string, bun: string): PreflightPlan {
  const pre = preset.preflight;
  if (pre?.command)
    return { argv: pre.command, label: pre.command.join(" "), timeoutMs: pre.timeoutMs, okEnv: pre.okEnv };
  if (!pre?.module) return { none: "none configured" };
  const abs = path.resolve(root, pre.module.path);
  if (!existsSync(abs)) return { none: `no ${pre.module.path} in this repository` };
  const fn = JSON.stringify(pre.module.export);
  const script = [
    `const m = await import(${JSON.stringify(pathToFileURL(abs).href)});`,
    `if (typeof m[${fn}] !== "function") { console.error(${JSON.stringify(`${pre.module.path} has no function export ${pre.module.export}`)}); process.exitCode = 2; }`,
    `else await m[${fn}](process.env);`,
  ].join("\n");
  return {
    argv: [bun, "-e", script],
    label: `${pre.module.path} ${pre.module.export}(env)`,
    timeoutMs: pre.timeoutMs,
    okEnv: pre.okEnv,
  };
}
