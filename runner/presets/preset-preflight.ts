/**
 * The preset's preflight: one check before any shard, so a dead dependency fails the run once, before money is
 * spent. A command, or a project module's function run in its own Bun process under shard supervision.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Preset } from "./preset-schema.ts";

/** What the preflight of a run is: a process to run, or why there is none. */
export type PreflightPlan =
  | { argv: string[]; label: string; timeoutMs: number; okEnv: string | null }
  | { none: string };

/** Decides the preflight: a configured `command` wins, else an existing module via `bun -e`; `bun` is absolute. */
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
    `if (typeof m[${fn}] !== "function") { ` +
      `console.error(${JSON.stringify(`${pre.module.path} has no function export ${pre.module.export}`)}); ` +
      `process.exitCode = 2; }`,
    `else await m[${fn}](process.env);`,
  ].join("\n");
  return {
    argv: [bun, "-e", script],
    label: `${pre.module.path} ${pre.module.export}(env)`,
    timeoutMs: pre.timeoutMs,
    okEnv: pre.okEnv,
  };
}
