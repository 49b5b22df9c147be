import path from "node:path";

/**
 * The package's root (package.json, runner/, dist/), for the files a run starts as programs. The compiled
 * CLI sets `__shardguardPackageRoot`: bundled, `import.meta.dir` would be the build machine's path.
 */
export const PACKAGE_ROOT: string =
  (globalThis as { __shardguardPackageRoot?: string }).__shardguardPackageRoot ??
  path.resolve(import.meta.dir, "..", "..");
