/**
 * The compiled CLI: `runner/cli-entry.ts` bundled to `dist/shardguard.cjs` with Bun's bytecode, so no start
 * transpiles the runner's modules (bench/README.md, "Where the time goes"). Built by `npm run build`; the command
 * runs it only while its fingerprint matches the sources. The preload, the guardian and `bg`'s worker stay sources.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The compiled CLI relative to the package root. Bun looks for its bytecode at the same path plus `.jsc`. */
export const COMPILED_CLI = path.join("dist", "shardguard.cjs");

/** Its first line: the package root from the file's own place, since the bundler inlines `import.meta.dir`. */
const BANNER =
  'globalThis.__shardguardPackageRoot ??= require("node:path").resolve(__dirname, "..");' +
  'var __shardguardBundleDir = __dirname, __shardguardBundleUrl = require("node:url").pathToFileURL(__filename).href;';

/** The files the bundle is built from: TypeScript, and report.html's script and style sheet (imported as text). */
const SOURCE_FILE = /\.(ts|js|css)$/;

/** Beside the compiled CLI: the fingerprint of the sources it was built from ({@link sourcesFingerprint}). */
const STAMP_SUFFIX = ".sources";

/**
 * A wyhash fingerprint of every {@link SOURCE_FILE} under `runner/` and `package.json` (paths and contents, sorted):
 * contents, since installers reset file times.
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

/** The compiled CLI at `root` when it and its bytecode match the sources now (its stamp); else null. */
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
    // Bundled, these would be the build machine's paths (fdir's createRequire among them): the bundle's own instead.
    define: { "import.meta.dir": "__shardguardBundleDir", "import.meta.url": "__shardguardBundleUrl" },
  });
  if (!result.success)
    throw new Error(`could not build the compiled CLI: ${result.logs.map((log) => String(log)).join("; ")}`);
  const compiled = path.join(root, COMPILED_CLI);
  writeFileSync(`${compiled}${STAMP_SUFFIX}`, `${fingerprint}\n`);
  return compiled;
}
