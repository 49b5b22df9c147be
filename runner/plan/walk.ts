/**
 * Test discovery without a glob engine for the common case, Bun's test-file naming under one directory: fdir loads
 * and walks faster than fast-glob (bench/README.md, "Where the time goes"). Anything else goes to fast-glob;
 * test/plan-walk.test.ts checks both find the same files, and the files `bun test` runs through links.
 */
import fs, { lstatSync, realpathSync, statSync } from "node:fs";
import { fdir } from "fdir";
import path from "node:path";

/** The test-name suffixes of `bun test` (before the extension). */
export const TEST_SUFFIXES = [".test", "_test", ".spec", "_spec"] as const;
/** The extensions `bun test` runs. */
export const TEST_EXTENSIONS = ["ts", "tsx", "js", "jsx", "mjs", "cjs"] as const;

/** A file name the default pattern matches in fast-glob's dialect with `dot: false` (case-sensitive). */
const TEST_NAME = new RegExp(
  `^(?!\\.)[^/]*(?:${TEST_SUFFIXES.map((s) => s.replace(".", "\\.")).join("|")})\\.(?:${TEST_EXTENSIONS.join("|")})$`,
);

/** Directory names never entered at any depth (`**\/NAME/**` in plan.ts's ALWAYS_IGNORED). */
const SKIPPED_NAMES = new Set(["node_modules", ".git", ".shardguard"]);

/** Glob characters in fast-glob's dialect: a path with none is static for fast-glob, so the walk may stand in. */
const GLOB_CHARS = /[*?!()[\]{}|+@\\]/;

/** True when `text` has no character fast-glob could read as glob syntax. */
export function isPlainPath(text: string): boolean {
  return !GLOB_CHARS.test(text);
}

/**
 * The test files `bun test` finds under root-relative `dir` ("" for the root), as root-relative real paths: what
 * fast-glob returns for the default pattern there with plan.ts's options, never entering `skipDirs` (plain paths).
 * Links are followed as Bun's scan follows them (docs/bun-behaviour.md); a file reached outside the root is `../...`.
 * @throws the fs error of an unreadable directory (EACCES), as fast-glob does
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
      // LINK_TOLERANT_FS: a dangling link must not end the crawl, as it ends nothing in Bun's scan.
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
  // fdir lists the directories it entered by their own names only: one unlisted above a file means a link.
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

/** node:fs for fdir (looked up per call, as fdir's default), but a dangling link or loop is a non-directory. */
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

/** A found file's real path (a link to a regular file: its target); null for a FIFO, dangling link or gone file. */
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

/** Root-relative fast-glob `matches` as root-relative real paths (the names Bun gives them), deduped, in order. */
export function toRealPaths(root: string, matches: readonly string[]): string[] {
  const realRoot = realOrNull(root) ?? root;
  const out = new Set<string>();
  for (const match of matches) {
    const real = realOrNull(path.join(root, match));
    if (real !== null) out.add(path.relative(realRoot, real).split(path.sep).join("/"));
  }
  return [...out];
}
