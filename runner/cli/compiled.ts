/**
 * The compiled CLI: `runner/cli-entry.ts` and everything it imports (zod
 * included) bundled into one CommonJS file with Bun's bytecode beside it,
 * `dist/shardguard.cjs` and `dist/shardguard.cjs.jsc`. Bun then neither
 * transpiles nor parses the runner's ~110 modules at each start: `shardguard
 * list` on 300 files took 27 instead of 50 ms, which every run pays before
 * its first shard can spawn (bench/README.md, P3).
 *
 * It is built by `npm run build`, which npm runs as `prepare` on `npm
 * install` in a checkout and before `npm pack`; the `shardguard` command
 * (runner/cli-bin.ts) runs it only while the sources are those it was built
 * from (a fingerprint beside it), and runs the sources otherwise, so an
 * edited checkout never runs stale code. The child preload, the guardian and `bg`'s detached run
 * stay source files: other processes start them by path.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The compiled CLI relative to the package root. Bun looks for its bytecode at the same path plus `.jsc`. */
export const COMPILED_CLI = path.join("dist", "shardguard.cjs");

/**
 * Its first line: where the package root is, from the file's own place
 * (util/package-root.ts), since the bundler inlines `import.meta.dir` as
 * the build machine's path.
 */
const BANNER = 'globalThis.__shardguardPackageRoot ??= require("node:path").resolve(__dirname, "..");';

/** The files the bundle is built from: TypeScript, and report.html's script and style sheet (imported as text). */
const SOURCE_FILE = /\.(ts|js|css)$/;

/** Beside the compiled CLI: the fingerprint of the sources it was built from ({@link sourcesFingerprint}). */
const STAMP_SUFFIX = ".sources";

/**
 * A fingerprint of the package's sources at `root`: a 64-bit hash (wyhash)
 * over the path and content of every {@link SOURCE_FILE} under `runner/`, in
 * sorted order, and of `package.json`. Contents, not times: an installer sets
 * every file's time to when it unpacked it, in no set order. ~1-2 ms (~120
 * files, ~0.8 MB).
 *
 * @throws the file system error when a source cannot be read
 */
export function sourcesFingerprint(root: string): string {
  const files: string[] = [];
  const dirs = ["runner"];
  for (let dir = dirs.pop(); dir !== undefined; dir = dirs.pop()) {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const relative = `${dir}/${entry.name}`;
      if (entry.isDirectory()) dirs.push(relative);
      else if (SOURCE_FILE.test(entry.name)) files.push(relative);
    }
  }
  files.sort();
  files.push("package.json");
  let hash = 0n;
  for (const file of files) {
    hash = Bun.hash.wyhash(file, hash);
    hash = Bun.hash.wyhash(readFileSync(path.join(root, file)), hash);
  }
  return hash.toString(16);
}

/**
 * The compiled CLI of the package at `root` when it exists with its
 * bytecode and was built from the sources as they are now (its stamp holds
 * their {@link sourcesFingerprint}); else null, and the caller runs the
 * sources.
 */
export function freshCompiledCli(root: string): string | null {
  const compiled = path.join(root, COMPILED_CLI);
  try {
    if (!existsSync(`${compiled}.jsc`) || !existsSync(compiled)) return null;
    return readFileSync(`${compiled}${STAMP_SUFFIX}`, "utf8").trim() === sourcesFingerprint(root) ? compiled : null;
  } catch {
    return null;
  }
}

/**
 * Builds the compiled CLI of the package at `root` into `root/dist`
 * (`Bun.build`: target bun, CommonJS, bytecode; one file, no splitting).
 *
 * @returns the compiled CLI's path
 * @throws Error naming the bundler's messages when the build fails
 */
export async function buildCompiledCli(root: string): Promise<string> {
  // Taken first: a source edited during the build leaves the stamp stale, never the other way round.
  const fingerprint = sourcesFingerprint(root);
  // Gone while the files are rewritten: a build that fails or is cut short leaves the sources in use.
  rmSync(path.join(root, `${COMPILED_CLI}${STAMP_SUFFIX}`), { force: true });
  const result = await Bun.build({
    entrypoints: [path.join(root, "runner", "cli-entry.ts")],
    target: "bun",
    format: "cjs",
    bytecode: true,
    outdir: path.join(root, path.dirname(COMPILED_CLI)),
    naming: path.basename(COMPILED_CLI),
    banner: BANNER,
  });
  if (!result.success)
    throw new Error(`could not build the compiled CLI: ${result.logs.map((log) => String(log)).join("; ")}`);
  const compiled = path.join(root, COMPILED_CLI);
  writeFileSync(`${compiled}${STAMP_SUFFIX}`, `${fingerprint}\n`);
  return compiled;
}
