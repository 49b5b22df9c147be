/**
 * The shardguard package's root directory (the one holding package.json,
 * runner/ and, once built, dist/), for the files a run starts as programs of
 * their own: the child preload, the guardian, the CLI entry.
 *
 * From the sources this is two levels above this file. The compiled CLI
 * (dist/shardguard.cjs, runner/cli/compiled.ts) is one file in dist/, where
 * the bundler would otherwise inline the build machine's path for
 * `import.meta.dir`: its first line sets `__shardguardPackageRoot` from its
 * own location instead, so a packed and installed copy finds its files.
 */
import path from "node:path";

export const PACKAGE_ROOT: string =
  (globalThis as { __shardguardPackageRoot?: string }).__shardguardPackageRoot ??
  path.resolve(import.meta.dir, "..", "..");
