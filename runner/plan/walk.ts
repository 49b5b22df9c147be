/**
 * The common case of test discovery without a glob engine: every file with
 * Bun's test-file naming under one directory, crawled by fdir. fast-glob
 * (plan/plan.ts) costs a run about 20 ms to load and 10-20 ms for its first
 * walk, on the critical path of every suite (bench/README.md, start-up);
 * fdir loads in about 5 ms and crawls gstack's tree (550 test files) in 3-5 ms. Anything else a pattern can say goes
 * to fast-glob, and test/plan-walk.test.ts checks on a tree of edge cases
 * that both find the same files, and on a tree of links that the plan holds
 * what a real `bun test` runs.
 */
import fs, { lstatSync, realpathSync, statSync } from "node:fs";
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
const TEST_NAME = new RegExp(
  `^(?!\\.)[^/]*(?:${TEST_SUFFIXES.map((s) => s.replace(".", "\\.")).join("|")})\\.(?:${TEST_EXTENSIONS.join("|")})$`,
);

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
 * The test files `bun test` finds under `dir`, as root-relative real paths
 * (forward slashes): what fast-glob returns for `DIR/**\/*{.test,...}.{ts,...}`
 * with `dot: false`, `onlyFiles: true`, `followSymbolicLinks: true` and
 * plan.ts's ignore list, each resolved by {@link toRealPaths}. Dot
 * directories and node_modules are never entered by name, and `skipDirs`
 * (root-relative, forward slashes, no glob characters) are not entered.
 *
 * Symbolic links are followed as Bun 1.4.4's scan follows them
 * (docs/bun-behaviour.md): a link with a test file's name to a file is that
 * file, a link to a directory is searched, and each file is planned once,
 * under its real path (the name Bun's JUnit and events give it). A file
 * reached through a link that lies outside the root comes back as
 * `../...`, for the plan to leave out and say so. A dangling link is nothing.
 *
 * @param root absolute root directory
 * @param dir root-relative directory to search ("" for the root)
 * @throws the fs error of a directory that cannot be read (EACCES), as fast-glob does;
 *   a directory gone while walking is skipped
 */
export function walkTestFiles(root: string, dir: string, skipDirs: readonly string[]): string[] {
  const base = dir === "" ? root : path.join(root, dir);
  const realRoot = realOrNull(root) ?? root;
  const skip = new Set(skipDirs.map((d) => path.join(root, d) + path.sep));
  let entries: string[];
  try {
    entries = new fdir({ fs: LINK_TOLERANT_FS })
      .withErrors()
      .withFullPaths()
      .withDirs()
      // fdir follows links to directories (and stops at a loop); LINK_TOLERANT_FS keeps a
      // dangling link from ending the crawl, as it ends nothing in Bun's scan.
      .withSymlinks({ resolvePaths: false })
      // fdir hands directories over with a trailing separator.
      .exclude((name, dirPath) => name.startsWith(".") || SKIPPED_NAMES.has(name) || skip.has(dirPath))
      .filter((entry, isDirectory) => isDirectory || TEST_NAME.test(path.basename(entry)))
      .crawl(base)
      .sync();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  // Directories entered through a link, longest first: a file under one is named by the link's real path.
  // fdir lists the directories it entered by their own names, never one reached through a
  // link: a file with an unlisted directory above it was found through a link.
  const dirs = new Set(entries.filter((e) => e.endsWith(path.sep)));
  dirs.add(base + path.sep);
  // The directory asked for may itself be (or lie under) a link.
  const baseLinked = realOrNull(base) !== path.join(realRoot, dir);
  const throughLink = (file: string) => {
    if (baseLinked) return true;
    for (let d = path.dirname(file); d.length >= base.length; d = path.dirname(d))
      if (!dirs.has(d + path.sep)) return true;
    return false;
  };
  const found = new Set<string>();
  for (const entry of entries) {
    if (entry.endsWith(path.sep)) continue;
    const real = realFile(entry, throughLink(entry));
    // A path found without a link is named from the root as given; a resolved one from the real root.
    if (real !== null)
      found.add(
        (real === entry ? path.relative(root, entry) : path.relative(realRoot, real)).split(path.sep).join("/"),
      );
  }
  return [...found];
}

/** What a link to nothing resolves to for fdir: a file (the filter then drops it). */
const NOT_A_DIRECTORY = { isDirectory: () => false, isFile: () => false } as fs.Stats;
const isDangling = (error: unknown) => ["ENOENT", "ELOOP"].includes((error as NodeJS.ErrnoException).code ?? "");

/**
 * The file system fdir crawls through (its `fs` option): node:fs, except that
 * resolving a link to nothing (or a loop of links) gives the link itself as
 * a non-directory instead of an error. Every other error (EACCES on a
 * directory, EIO) still ends the crawl. Looked up on each call, as fdir's own default.
 */
const LINK_TOLERANT_FS = {
  readdir: fs.readdir,
  readdirSync: ((...args: Parameters<typeof fs.readdirSync>) => fs.readdirSync(...args)) as typeof fs.readdirSync,
  realpath: fs.realpath,
  stat: fs.stat,
  realpathSync: ((file: fs.PathLike) => {
    try {
      return fs.realpathSync(file);
    } catch (error) {
      if (isDangling(error)) return String(file);
      throw error;
    }
  }) as typeof fs.realpathSync,
  statSync: ((file: fs.PathLike) => {
    try {
      return fs.statSync(file);
    } catch (error) {
      if (isDangling(error)) return NOT_A_DIRECTORY;
      throw error;
    }
  }) as typeof fs.statSync,
};

/**
 * The real path of a test file the crawl found: a regular file as it is
 * (resolved when it was found through a linked directory), a link to a
 * regular file as its target; null for anything else (a FIFO, a link to
 * nothing, a file gone meanwhile).
 */
function realFile(entry: string, throughLink: boolean): string | null {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(entry);
  } catch {
    return null;
  }
  if (stat.isSymbolicLink()) {
    try {
      return statSync(entry).isFile() ? realpathSync.native(entry) : null;
    } catch {
      return null;
    }
  }
  if (!stat.isFile()) return null;
  return throughLink ? realOrNull(entry) : entry;
}

function realOrNull(file: string): string | null {
  try {
    return realpathSync.native(file);
  } catch {
    return null;
  }
}

/**
 * `matches` (root-relative, as fast-glob returns them, links followed) as
 * root-relative real paths, deduplicated, in order: the names Bun gives the
 * files it runs. A match gone meanwhile is dropped; one outside the root
 * comes back as `../...`.
 */
export function toRealPaths(root: string, matches: readonly string[]): string[] {
  const realRoot = realOrNull(root) ?? root;
  const out = new Set<string>();
  for (const match of matches) {
    const real = realOrNull(path.join(root, match));
    if (real !== null) out.add(path.relative(realRoot, real).split(path.sep).join("/"));
  }
  return [...out];
}
