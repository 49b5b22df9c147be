/**
 * The common case of test discovery without a glob engine: every file with
 * Bun's test-file naming under one directory, crawled by fdir. fast-glob
 * (plan/plan.ts) costs a run about 20 ms to load and 10-20 ms for its first
 * walk, on the critical path of every suite (bench/README.md, start-up);
 * fdir loads in about 5 ms and crawls gstack's tree (550 test files) in 3-5 ms. Anything else a pattern can say goes
 * to fast-glob, and test/plan-walk.test.ts checks on a tree of edge cases
 * that both find the same files.
 */
import { lstatSync } from "node:fs";
import { fdir } from "fdir";
import path from "node:path";

/** The test-name suffixes of `bun test` (before the extension). */
export const TEST_SUFFIXES = [".test", "_test", ".spec", "_spec"] as const;
/** The extensions `bun test` runs. */
export const TEST_EXTENSIONS = ["ts", "tsx", "js", "jsx", "mjs", "cjs"] as const;

/**
 * A file name `*{.test,_test,.spec,_spec}.{ts,...}` matches in fast-glob's
 * dialect with `dot: false`: any name not starting with "." that ends with
 * a suffix and an extension (case-sensitive).
 */
const TEST_NAME = new RegExp(`^(?!\\.)[^/]*(?:${TEST_SUFFIXES.map((s) => s.replace(".", "\\.")).join("|")})\\.(?:${TEST_EXTENSIONS.join("|")})$`);

/** Directory names never entered at any depth (`**\/NAME/**` in plan.ts's ALWAYS_IGNORED). */
const SKIPPED_NAMES = new Set(["node_modules", ".git", ".shardguard"]);

/**
 * Glob characters in fast-glob's dialect (`*?`, classes, groups, extglobs,
 * braces, escapes). A path without any of them is static for fast-glob, so
 * the walk may stand in for it.
 */
const GLOB_CHARS = /[*?!()[\]{}|+@\\]/;

/** True when `text` has no character fast-glob could read as glob syntax. */
export function isPlainPath(text: string): boolean {
  return !GLOB_CHARS.test(text);
}

/**
 * The root-relative paths (forward slashes) of files under `dir` with Bun's
 * test-file naming: what fast-glob returns for `DIR/**\/*{.test,...}.{ts,...}`
 * with `dot: false`, `onlyFiles: true`, `followSymbolicLinks: false`, and
 * plan.ts's ignore list. Dot directories and node_modules are never entered,
 * symbolic links are neither followed nor listed, and `skipDirs` (root-relative,
 * forward slashes, no glob characters) are not entered. The crawl is fdir's
 * (a well-kept directory crawler that loads in a few ms); only the rules of
 * what is entered and what is kept are ours.
 *
 * @param root absolute root directory
 * @param dir root-relative directory to search ("" for the root)
 * @throws the fs error of a directory that cannot be read (EACCES), as fast-glob does;
 *   a directory gone while walking is skipped
 */
export function walkTestFiles(root: string, dir: string, skipDirs: readonly string[]): string[] {
  const base = dir === "" ? root : path.join(root, dir);
  const skip = new Set(skipDirs.map((d) => path.join(root, d) + path.sep));
  let found: string[];
  try {
    found = new fdir()
      .withErrors()
      .withRelativePaths()
      // fdir hands directories over with a trailing separator.
      .exclude((name, dirPath) => name.startsWith(".") || SKIPPED_NAMES.has(name) || skip.has(dirPath))
      // Symbolic links reach the filter as files: fast-glob's onlyFiles without following lists none.
      .filter((file) => TEST_NAME.test(path.basename(file)) && isRegularFile(path.join(base, file)))
      .crawl(base)
      .sync();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const prefix = dir === "" ? "" : `${dir}/`;
  return found.map((f) => prefix + f.split(path.sep).join("/"));
}

/** True for a regular file (not a link, FIFO or socket), without following links; a file gone meanwhile is not one. */
function isRegularFile(abs: string): boolean {
  try {
    return lstatSync(abs).isFile();
  } catch {
    return false;
  }
}
