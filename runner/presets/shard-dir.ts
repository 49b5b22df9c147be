/**
 * A preset's per-shard directory (`shard-dir`): each shard gets `<env>=<base>/shards/<name>`, so what a test
 * writes there stays per file instead of the last shard's flush winning.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../config/settings-schema.ts";
import { withoutDebuggerEnv } from "../exec/bun-command.ts";
import type { ShardDirSpec } from "./preset-schema.ts";

/** Wall-clock limit of the module call, ms: a slug lookup, not a test. */
export const SHARD_DIR_MODULE_TIMEOUT_MS = 10_000;

/**
 * A shard's directory name under `<base>/shards/`: `plan`, its slug; `file-stem`, its files' stems joined by "+",
 * other than `[A-Za-z0-9._+-]` as "-" (gstack's scripts/test-paid-shards.ts rule, so baselines line up).
 */
export function shardDirName(
  spec: Pick<ShardDirSpec, "slug">,
  shard: { slug: string; files: readonly string[] },
): string {
  if (spec.slug === "plan") return shard.slug;
  return shard.files
    .map((file) =>
      path.posix.basename(file.split(path.sep).join("/")).replace(/[._](?:test|spec)\.(?:[cm]?[jt]s|tsx|jsx)$/, ""),
    )
    .join("+")
    .replace(/[^a-zA-Z0-9._+-]/g, "-");
}

/**
 * The base from the spec's project module (when it exists in `root`): its export's string, from a Bun process.
 *
 * @param bun the run's Bun executable (absolute)
 * @returns the absolute base, or null when the spec names no module or the project has none
 * @throws ConfigError (exit 2, before any shard) when the call fails, times out or returns no non-empty string
 */
export function baseFromModule(
  spec: ShardDirSpec,
  root: string,
  bun: string,
  env: Record<string, string | undefined>,
  timeoutMs = SHARD_DIR_MODULE_TIMEOUT_MS,
): string | null {
  if (spec.module === null) return null;
  const abs = path.resolve(root, spec.module.path);
  if (!existsSync(abs)) return null;
  const what = `${spec.module.path} ${spec.module.export}()`;
  const fn = JSON.stringify(spec.module.export);
  const script = [
    `const m = await import(${JSON.stringify(pathToFileURL(abs).href)});`,
    `if (typeof m[${fn}] !== "function") { console.error("no function export"); process.exitCode = 2; }`,
    `else process.stdout.write(JSON.stringify(await m[${fn}]()));`,
  ].join("\n");
  const r = spawnSync(bun, ["-e", script], {
    cwd: root,
    env: withoutDebuggerEnv(env),
    timeout: timeoutMs,
    killSignal: "SIGKILL",
    maxBuffer: 1024 * 1024,
    encoding: "utf8",
  });
  const fail = (why: string) =>
    new ConfigError(
      `preset shard-dir: ${what} (the base of ${spec.env}) ${why}; set ${spec.env} to choose the base yourself`,
    );
  if (r.error && (r.error as NodeJS.ErrnoException).code === "ETIMEDOUT")
    throw fail(`did not return within ${timeoutMs / 1000}s`);
  if (r.error) throw fail(`could not run: ${r.error.message}`);
  if (r.status !== 0) {
    const lines = (r.stderr ?? "")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    throw fail(
      `failed: ${lines.find((l) => /^(error|\w*Error)\b/.test(l)) ?? lines.at(-1) ?? `exit ${r.status ?? r.signal}`}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(r.stdout);
  } catch {
    value = undefined;
  }
  if (typeof value !== "string" || value === "")
    throw fail(`returned ${r.stdout.trim() === "" ? "nothing" : r.stdout.trim().slice(0, 80)}, not a directory path`);
  return path.resolve(root, value);
}
