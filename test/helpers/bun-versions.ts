/**
 * The Bun versions shardguard supports, installed from the npm registry into
 * a cache directory so tests can run a shard child under each of them
 * (`--bun <path>`). Run as a program (`bun test/helpers/bun-versions.ts`),
 * it installs every one of them: `.ci/run` does that before `npm test`.
 *
 * Each version is the platform package `@oven/bun-<os>-<arch>[-musl][-baseline]`
 * of that version (what the `bun` package's postinstall would pick), installed
 * with `npm install --ignore-scripts`: nothing but the registry npm is set up
 * for is asked, and no install script runs. The cache is keyed by version
 * (`<cache>/<version>/bun`), filled under a lock directory so test files
 * running in parallel install each version once.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";

const REPO = path.resolve(import.meta.dir, "..", "..");

/** The Bun pinned in package.json (node_modules/.bin/bun): the full suite runs on it. */
export const PINNED_BUN = "1.4.4";

/**
 * Every Bun the differential table runs on, oldest first: 1.3.0 (the oldest
 * supported), bknd's pinned 1.3.3, gstack's pinned 1.3.13, the last 1.3 release, the
 * pinned one, the newest on the registry.
 * The support range (results/bun-capabilities.ts) spans them.
 */
export const SUPPORTED_BUNS = ["1.3.0", "1.3.3", "1.3.13", "1.3.14", PINNED_BUN, "1.4.5"] as const;

/**
 * Where installed versions live: `node_modules/.cache/shardguard-bun` (gone with node_modules), or
 * `SHARDGUARD_BUN_CACHE`.
 */
export const BUN_CACHE =
  process.env.SHARDGUARD_BUN_CACHE ?? path.join(REPO, "node_modules", ".cache", "shardguard-bun");

/** A lock older than this (ms) is taken as left by a killed installer: 5 min. */
const STALE_LOCK_MS = 5 * 60_000;

/** The npm package names that may hold this platform's Bun binary, best first. */
function platformPackages(): string[] {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const arch = process.arch === "arm64" ? "aarch64" : process.arch;
  const report =
    process.platform === "linux"
      ? (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)
      : undefined;
  const musl = process.platform === "linux" && report?.header?.glibcVersionRuntime === undefined ? "-musl" : "";
  const base = `@oven/bun-${os}-${arch}${musl}`;
  // The baseline build runs on CPUs without AVX2; only x64 has one.
  return arch === "x64" ? [base, `${base}-baseline`] : [base];
}

/** `--version` of a binary, or null when it does not run. */
function versionOf(bin: string): string | null {
  const probe = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 20_000 });
  return probe.status === 0 ? probe.stdout.trim() : null;
}

/** The installed binary of `version` in the cache, when present. */
function cached(version: string): string | null {
  const bin = path.join(BUN_CACHE, version, "bun");
  return existsSync(bin) ? bin : null;
}

/** Installs `version` into `<cache>/<version>` (not locked; see {@link bunBinary}). */
function install(version: string): string {
  const tmp = path.join(BUN_CACHE, `${version}.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    for (const pkg of platformPackages()) {
      execFileSync(
        "npm",
        [
          "install",
          "--prefix",
          tmp,
          "--no-save",
          "--no-package-lock",
          "--ignore-scripts",
          "--no-audit",
          "--no-fund",
          "--loglevel=error",
          `${pkg}@${version}`,
        ],
        {
          stdio: ["ignore", "ignore", "inherit"],
          timeout: 300_000,
        },
      );
      const bin = path.join(tmp, "node_modules", ...pkg.split("/"), "bin", "bun");
      if (versionOf(bin) === version) {
        const dir = path.join(BUN_CACHE, version);
        mkdirSync(dir, { recursive: true });
        renameSync(bin, path.join(dir, "bun"));
        return path.join(dir, "bun");
      }
    }
    throw new Error(
      `bun-versions: no package of ${platformPackages().join(", ")}@${version} ` +
        `gave a Bun that answers --version ${version}`,
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The path of Bun `version`'s binary: the pinned one from node_modules, else
 * the cached install, installing it first when missing (about 3 s and 100 MB
 * per version). Parallel callers wait on one installer (a lock directory,
 * polled every 200 ms; a lock older than 5 minutes is taken over).
 *
 * @throws Error when npm cannot install it, or the installed binary does not run
 */
export async function bunBinary(version: string): Promise<string> {
  if (version === PINNED_BUN) return path.join(REPO, "node_modules", ".bin", "bun");
  const hit = cached(version);
  if (hit) return hit;
  mkdirSync(BUN_CACHE, { recursive: true });
  const lock = path.join(BUN_CACHE, `${version}.lock`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const done = cached(version);
      if (done) return done;
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      if (age > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      else await Bun.sleep(200);
    }
  }
  try {
    return cached(version) ?? install(version);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  for (const version of SUPPORTED_BUNS) console.log(`bun ${version}: ${await bunBinary(version)}`);
}
