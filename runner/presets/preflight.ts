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
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../config/schema.ts";
import { startProcess } from "../exec/process.ts";
import { logTail, type Out } from "../report/console.ts";
import type { Preset } from "./schema.ts";

/** What the preflight of a run is: a process to run, or why there is none. */
export type PreflightPlan = { argv: string[]; label: string; timeoutMs: number; okEnv: string | null } | { none: string };

/**
 * Decides the preflight of a run. A configured `command` wins; otherwise a
 * configured module that exists in `root` is called through `bun -e`.
 *
 * @param bun the Bun executable of the run (absolute path)
 */
export function planPreflight(preset: Preset, root: string, bun: string): PreflightPlan {
  const pre = preset.preflight;
  if (pre?.command) return { argv: pre.command, label: pre.command.join(" "), timeoutMs: pre.timeoutMs, okEnv: pre.okEnv };
  if (!pre?.module) return { none: "none configured" };
  const abs = path.resolve(root, pre.module.path);
  if (!existsSync(abs)) return { none: `no ${pre.module.path} in this repository` };
  const fn = JSON.stringify(pre.module.export);
  const script = [
    `const m = await import(${JSON.stringify(pathToFileURL(abs).href)});`,
    `if (typeof m[${fn}] !== "function") { console.error(${JSON.stringify(`${pre.module.path} has no function export ${pre.module.export}`)}); process.exit(2); }`,
    `await m[${fn}](process.env);`,
  ].join("\n");
  return { argv: [bun, "-e", script], label: `${pre.module.path} ${pre.module.export}(env)`, timeoutMs: pre.timeoutMs, okEnv: pre.okEnv };
}

/**
 * Runs the preflight under supervision, logging to `OUT/preflight.log`.
 *
 * @throws ConfigError when it does not exit 0 within its timeout (no shard has started)
 */
export async function runPreflight(
  plan: Extract<PreflightPlan, { argv: string[] }>,
  where: { root: string; out: string; graceMs: number },
  env: Record<string, string | undefined>,
  out: Out,
): Promise<void> {
  // Not under OUT/logs: that is a link to the newest run's logs, and a real
  // directory there would stop later runs from updating it.
  await mkdir(where.out, { recursive: true });
  const logPath = path.join(where.out, "preflight.log");
  await rm(logPath, { force: true });
  out.line(`shardguard: preflight: ${plan.label} (timeout ${plan.timeoutMs / 1000}s) log: ${logPath}`);
  const proc = startProcess({ argv: plan.argv, cwd: where.root, env, logPath, timeoutMs: plan.timeoutMs, graceMs: where.graceMs });
  const outcome = await proc.done;
  if (outcome.spawnError === null && outcome.exitCode === 0 && outcome.killedBy === null) {
    out.line(`shardguard: preflight passed in ${(outcome.durationMs / 1000).toFixed(1)}s`);
    return;
  }
  const tail = await logTail(logPath);
  if (tail) out.line(tail.split("\n").map((l) => `    | ${l}`).join("\n"));
  const how =
    outcome.spawnError !== null
      ? `could not start (${outcome.spawnError})`
      : outcome.killedBy === "timeout"
        ? `timed out after ${plan.timeoutMs / 1000}s`
        : outcome.exitCode !== null
          ? `exited ${outcome.exitCode}`
          : `ended by ${outcome.signal}`;
  throw new ConfigError(`preflight ${JSON.stringify(plan.label)} ${how}; no shard started (log: ${logPath})`);
}
