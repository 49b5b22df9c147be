/**
 * Bun's coverage and the shard child: every loaded file not under `node_modules` counts toward coverage, our
 * preload included, so shards load a copy under one; an unmet threshold exits 1 with all tests passed, which
 * the verdict names from structured data only (docs/bun-behaviour.md, "Coverage").
 */
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { readRegularTextSync } from "../util/regular-file.ts";
import { SHARD_PRELOAD } from "./bun-command.ts";

/**
 * The preload path for a run's shards: {@link SHARD_PRELOAD} when already under `node_modules`, else a copy of
 * runner/child/ at `<dir>/node_modules/shardguard/`. Throws the copy's error (the caller may fall back).
 */
export function coverageSafePreload(dir: string): string {
  if (SHARD_PRELOAD.split(path.sep).includes("node_modules")) return SHARD_PRELOAD;
  const target = path.join(dir, "node_modules", "shardguard", path.basename(SHARD_PRELOAD));
  mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
  const source = path.dirname(SHARD_PRELOAD);
  for (const name of readdirSync(source)) {
    if (name.endsWith(".ts")) copyFileSync(path.join(source, name), path.join(path.dirname(target), name));
  }
  return target;
}

/**
 * The coverage threshold Bun enforces in a shard, as a reason shows it, or null when coverage is off or has no
 * threshold. From the bunfig.toml Bun reads in `root` (or `--config`); unreadable gives null (Bun reports it).
 */
export function coverageThreshold(root: string, bunArgs: readonly string[]): string | null {
  let config = path.join(root, "bunfig.toml");
  bunArgs.forEach((arg, i) => {
    const m = /^(?:--config|-c)=(.+)$/.exec(arg);
    if (m) config = path.resolve(root, m[1]!);
    else if ((arg === "--config" || arg === "-c") && bunArgs[i + 1] !== undefined)
      config = path.resolve(root, bunArgs[i + 1]!);
  });
  let test: Record<string, unknown> | undefined;
  try {
    test = (Bun.TOML.parse(readRegularTextSync(config)) as { test?: Record<string, unknown> }).test;
  } catch {
    return null;
  }
  const enabled =
    test?.coverage === true || bunArgs.some((a) => a === "--coverage" || a.startsWith("--coverage-reporter"));
  const threshold = test?.coverageThreshold;
  if (!enabled || threshold === undefined) return null;
  if (typeof threshold === "number") return `coverageThreshold ${threshold}`;
  if (typeof threshold === "object" && threshold !== null) {
    const parts = Object.entries(threshold).map(([k, v]) => `${k} = ${String(v)}`);
    return `coverageThreshold { ${parts.join(", ")} }`;
  }
  return null;
}
