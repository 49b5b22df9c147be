/** Checks made before any shard starts; each failure is a ConfigError (exit 2, nothing spent). */
import { spawnSync } from "node:child_process";
import { accessSync, constants, lstatSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, type RunSettings } from "../config/settings-schema.ts";
import { bunCapabilities, lackedFlags, OLDEST_SUPPORTED_BUN, unsupportedBun } from "../results/bun-capabilities.ts";
import { isolates } from "../exec/bun-command.ts";

/** Oldest Bun shardguard supports (results/bun-capabilities.ts; package.json `engines` says the same). */
export const MIN_BUN_VERSION = OLDEST_SUPPORTED_BUN;

/** Facts learned by {@link preflight}. */
export interface PreflightResult {
  bunVersion: string;
}

/**
 * Report paths must be absent or regular files, never planned test files: a report is renamed over its target,
 * which would replace a device, FIFO or symlink.
 * @param plannedFiles absolute paths of the planned test files
 * @throws ConfigError naming the flag and what the path is
 */
export function checkReportPaths(settings: RunSettings, plannedFiles: readonly string[]): void {
  const planned = new Set(plannedFiles.map((f) => path.resolve(f)));
  for (const [flag, file] of [
    ["--junit", settings.junit],
    ["--json", settings.json],
    ["--ctrf", settings.ctrf],
    ["--html", settings.html],
  ] as const) {
    if (planned.has(path.resolve(file))) {
      throw new ConfigError(`invalid ${flag} ${JSON.stringify(file)}: it is one of the planned test files`);
    }
    let kind: string | null = null;
    try {
      const st = lstatSync(file);
      if (st.isSymbolicLink()) kind = "a symbolic link";
      else if (st.isDirectory()) kind = "a directory";
      else if (!st.isFile()) kind = "a device, FIFO or socket";
    } catch {
      // Absent: it will be created.
    }
    if (kind)
      throw new ConfigError(
        `invalid ${flag} ${JSON.stringify(file)}: it is ${kind}; expected a regular file path (reports replace the ` +
          `file atomically)`,
      );
  }
}

/** Compares versions by Bun's semver order (negative when a < b); an unparsable one sorts first and fails. */
export function compareVersions(a: string, b: string): number {
  try {
    return Bun.semver.order(a, b);
  } catch {
    return -1; // "Invalid SemVer"
  }
}

/**
 * Verifies that the output is writable and Bun runs and is recent enough.
 * @throws ConfigError naming what is wrong
 */
export async function preflight(settings: RunSettings, plannedFiles: readonly string[] = []): Promise<PreflightResult> {
  checkReportPaths(settings, plannedFiles);
  for (const [what, dir] of [
    ["--out", settings.out],
    ["--junit directory", path.dirname(settings.junit)],
    ["--json directory", path.dirname(settings.json)],
    ["--ctrf directory", path.dirname(settings.ctrf)],
    ["--html directory", path.dirname(settings.html)],
  ] as const) {
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
      const probe = path.join(dir, `.shardguard-write-test-${process.pid}`);
      writeFileSync(probe, "");
      rmSync(probe);
    } catch (error) {
      throw new ConfigError(
        `invalid ${what} ${JSON.stringify(dir)}: expected a writable directory ` +
          `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
  const version = bunVersionOf(settings.bun);
  const which = bunNamed(settings.bun, version);
  const refused = unsupportedBun(version);
  if (refused) throw new ConfigError(`${which.refusal}: ${refused} (supported: ${MIN_BUN_VERSION} and later)`);
  const lacked = lackedFlags(bunCapabilities(version), settings.bunArgs);
  if (lacked.length > 0) {
    throw new ConfigError(
      `${which.refusal}: Bun ${version} has no bun test flag ${lacked.join(", ")}; drop it, or use ` +
        `${which.other} (1.3.13 or later)`,
    );
  }
  if (settings.testEvents && isolates(settings.bunArgs) && !bunCapabilities(version).isolateWithEvents) {
    throw new ConfigError(
      `${which.refusal}: Bun ${version} loses the end of an --isolate run under the test events and the bun test ` +
        `flags hold --isolate; use --no-test-events, ${which.other} (1.3.13, 1.4.4 or later), or drop --isolate`,
    );
  }
  return { bunVersion: version };
}

/**
 * How a refusal names the Bun it means: the `--bun` given, or, when none was (the default is the Bun running
 * shardguard), that one by version and path, since no `--bun` is there to blame.
 */
function bunNamed(bun: string, version: string): { refusal: string; other: string } {
  return bun === process.execPath
    ? {
        refusal: `the Bun running shardguard (Bun ${version}, ${bun}) cannot run this`,
        other: "--bun with another Bun",
      }
    : { refusal: `invalid --bun ${JSON.stringify(bun)}`, other: "another Bun" };
}

/**
 * The version of the Bun at `bun`: `Bun.version` for our own executable, no child before the first shard
 * (bench/README.md, "Where the time goes").
 * @throws ConfigError when `bun` does not answer `--version` like Bun
 */
function bunVersionOf(bun: string): string {
  if (bun === process.execPath) return Bun.version;
  const probe = spawnSync(bun, ["--version"], { encoding: "utf8", timeout: 10_000 });
  const version = probe.stdout?.trim() ?? "";
  if (probe.status !== 0 || !/^\d+\.\d+\.\d+/.test(version)) {
    throw new ConfigError(`invalid --bun ${JSON.stringify(bun)}: it did not answer --version like Bun does`);
  }
  return version;
}
