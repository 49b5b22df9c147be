/**
 * What a background run must know before it starts (files for the cap, preset, diff base for the dedupe key),
 * validating its flags as `shardguard run` will, so a usage error is refused before anything starts.
 */
import { createHash } from "node:crypto";
import type { ParsedWithExtras } from "../../config/args.ts";
import { resolveSettings } from "../../config/load.ts";
import { ConfigError, type RunSettings } from "../../config/settings-schema.ts";
import { runTool } from "../../exec/detach.ts";
import { planRun, type Plan } from "../../plan/plan.ts";
import { slicePlan } from "../../plan/slice.ts";
import { readTimings } from "../../plan/timings.ts";
import { detectBase } from "../../presets/diff.ts";
import type { Preset } from "../../presets/preset-schema.ts";
import { preparePresetRun, presetRequestFromArgs } from "../../presets/session.ts";
import type { Host } from "../../engine/host.ts";
import { lastFailedFiles, planLastFailed } from "../last-failed.ts";
import { lastFailedScope } from "../preset-run.ts";
import { planFlags } from "../run-command.ts";
import { isolates } from "../../exec/bun-command.ts";

/** The run a background run will start, as far as `bg` needs it. */
export interface BgPlan {
  settings: RunSettings;
  /** Root-relative files that will run (skipped-by-diff ones left out). */
  files: string[];
  preset: Preset | null;
  tier: string | null;
  /** The git ref diff selection compares with, when the preset selects by diff. */
  baseRef: string | null;
}

/**
 * Plans the run `args` describe, starting nothing.
 * @throws ConfigError (exit 2) as `run` would, or for no file
 */
export async function planBackgroundRun(args: ParsedWithExtras, host: Host): Promise<BgPlan> {
  const name = args.extras.get("--preset");
  // What `run` refuses, refused before anything starts; with --shard, the cap and the count are this slice's.
  const { spec, lastFailed } = planFlags(args, host.env);
  if (name === undefined) {
    const settings = resolveSettings({ args, env: host.env, cwd: host.cwd, defaultBun: process.execPath });
    const timings = readTimings(settings.timings);
    let plan: Plan;
    if (lastFailed) {
      const rerun = planLastFailed(settings, args.patterns);
      // Nothing to rerun (every file passed): the run says so and ends with EXIT=0; files that did not
      // pass but cannot run now are refused (exit 2) by planLastFailed.
      plan =
        rerun.kind === "nothing"
          ? { root: settings.root, patterns: [], shards: [], included: new Map(), excluded: [] }
          : rerun.plan;
    } else {
      plan = planRun({
        root: settings.root,
        patterns: settings.patterns,
        filesPerShard: settings.filesPerShard,
        batching: {
          durations: timings.durations,
          jobs: settings.jobs,
          isolated: isolates(settings.bunArgs),
          timeoutMs: settings.timeoutMs,
        },
        out: settings.out,
        exclusive: settings.exclusive,
      });
      if (plan.shards.length === 0)
        throw new ConfigError(`no test files to run under ${settings.root} (shardguard list shows the plan)`);
    }
    if (spec) plan = slicePlan(plan, spec, timings.durations).plan;
    return { settings, files: plan.shards.flatMap((s) => s.files), preset: null, tier: null, baseRef: null };
  }
  if (typeof name !== "string") throw new ConfigError("flag --preset needs a value");
  const request = presetRequestFromArgs(args, host.cwd, host.env);
  const p = lastFailed ? (await lastFailedScope(request)).whole : await preparePresetRun(request);
  const shards = spec ? slicePlan(p.plan, spec, readTimings(p.settings.timings).durations).plan.shards : p.plan.shards;
  const skippedFiles = new Set(p.skipped.flatMap((s) => s.files));
  let files = shards.flatMap((s) => s.files).filter((f) => !skippedFiles.has(f));
  if (lastFailed) {
    // The rerun's files, as commands/preset-run.ts picks them.
    const tierWord = p.tier ? ` in tier ${p.tier.name}` : "";
    const found = lastFailedFiles(p.settings, args.patterns, (f) =>
      files.includes(f) ? null : `is not one of preset ${p.preset.name}'s files${tierWord}`,
    );
    files = found.kind === "files" ? found.files : [];
  }
  if (p.plan.shards.length === 0)
    throw new ConfigError(
      `nothing to run: every file of preset ${name} is excluded (shardguard list --preset ${name} shows why)`,
    );
  const sel = p.preset.selection;
  const baseRef = sel
    ? host.env[sel.baseEnv] || detectBase(p.settings.root, sel.baseCandidates) || sel.defaultBase
    : null;
  return { settings: p.settings, files, preset: p.preset, tier: p.tier?.name ?? null, baseRef };
}

/** The default lane: one per root and preset, `bg-<preset or run>-<hash of the root>`. */
export function defaultLane(root: string, preset: string | null): string {
  const hash = createHash("sha256").update(root).digest("hex").slice(0, 10);
  return `bg-${(preset ?? "run").replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 60)}-${hash}`;
}

/** `git merge-base HEAD <ref>`, null when git cannot tell. */
export function mergeBase(root: string, ref: string): string | null {
  const out = runTool("git", ["merge-base", "HEAD", ref], { cwd: root, timeoutMs: 30_000 });
  const sha = out.stdout.trim();
  return out.status === 0 && /^[0-9a-f]{40}$/.test(sha) ? sha : null;
}
