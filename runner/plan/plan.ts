/** Planning: which test files run, and how they are grouped into shards. Pure apart from reading the file tree. */
import { statSync } from "node:fs";
import path from "node:path";
import type FastGlob from "fast-glob";
import { ConfigError } from "../config/settings-schema.ts";
import { plural } from "../util/format.ts";
import { sha256Hex } from "../util/random.ts";
import { autoBatches, type AutoBatchInputs } from "./auto-batch.ts";
import { isPlainPath, TEST_EXTENSIONS, TEST_SUFFIXES, toRealPaths, walkTestFiles } from "./walk.ts";

/** fast-glob, loaded on first use: a run whose patterns are directories never needs it (plan/walk.ts). */
let fastGlob: typeof FastGlob | null = null;
const fg = (): typeof FastGlob => (fastGlob ??= require("fast-glob") as typeof FastGlob);

/** Bun's own test-file naming (the `bun test` docs). */
export const DEFAULT_PATTERN = `**/*{${TEST_SUFFIXES.join(",")}}.{${TEST_EXTENSIONS.join(",")}}`;

/** Directories never searched: dependencies, VCS data and shardguard's own output. */
export const ALWAYS_IGNORED = ["**/node_modules/**", "**/.git/**", "**/.shardguard/**"];

/** A planned shard: files run together by one `bun test` child. */
export interface PlannedShard {
  /** 1-based position in the plan. */
  index: number;
  /** Stable, filesystem-safe name derived from the file paths (same files → same slug). */
  slug: string;
  /** Paths relative to the root, forward slashes, sorted. */
  files: string[];
}

/** A file the plan considered and left out, with the reason. */
export interface ExcludedFile {
  file: string;
  reason: string;
}

/** The plan of a run: shards in order, plus what was left out and why. */
export interface Plan {
  root: string;
  /** The patterns used (the default pattern when none were given). */
  patterns: string[];
  shards: PlannedShard[];
  /** Why each file is in: the first pattern it matched. */
  included: Map<string, string>;
  excluded: ExcludedFile[];
}

/** Inputs of {@link planRun}. */
export interface PlanOptions {
  root: string;
  patterns: readonly string[];
  /** Files per shard, or "auto": batches sized from `batching` (plan/auto-batch.ts). */
  filesPerShard: number | "auto";
  /** Recorded durations and jobs for `filesPerShard: "auto"`; none recorded and 1 job when absent. */
  batching?: AutoBatchInputs;
  /** Extra ignore globs, relative to the root. */
  ignore?: readonly string[];
  /** The output directory (absolute): a plan with a file in it is refused ({@link refuseOutAmongTests}). */
  out?: string;
  /** Globs of exclusive files (the `exclusive` setting): each gets a shard of its own whatever `filesPerShard` says. */
  exclusive?: readonly string[];
}

/** Discovers, dedupes, sorts and shards the matching files (docs/configuration.md, "Patterns").
 * @throws ConfigError when nothing matches (a run of nothing must never pass) or a plain path names no file */
export function planRun(options: PlanOptions): Plan {
  const patterns = options.patterns.length > 0 ? [...options.patterns] : [DEFAULT_PATTERN];
  const included = new Map<string, string>();
  const excluded: ExcludedFile[] = [];
  const skipDirs = walkableIgnores(options.ignore ?? []);
  for (const pattern of patterns) {
    const glob = expandPattern(options.root, pattern);
    const dir = skipDirs ? walkableDir(glob) : null;
    // Links are followed and every match named by its real path, as Bun runs it (plan/walk.ts).
    const found = readingTree(options.root, () =>
      dir !== null
        ? walkTestFiles(options.root, dir, skipDirs!)
        : toRealPaths(
            options.root,
            fg().sync(glob, {
              cwd: options.root,
              ignore: [...ALWAYS_IGNORED, ...(options.ignore ?? [])],
              onlyFiles: true,
              dot: false,
              followSymbolicLinks: true,
            }),
          ),
    );
    const matches = found.filter((f) => !f.startsWith("../"));
    for (const f of found) {
      const file = path.resolve(options.root, f);
      if (!f.startsWith("../") || excluded.some((e) => e.file === file)) continue;
      excluded.push({
        file,
        reason:
          `reached through a symbolic link matching ${pattern}, outside --root (bun test would run it; ` +
          `shardguard plans only files under the root)`,
      });
    }
    if (matches.length === 0) {
      // A path written out (no glob characters) that matches nothing is a typo, not an empty selection.
      if (!fg().isDynamicPattern(pattern.replace(/\\/g, "/"))) {
        if (found.length > 0)
          throw new ConfigError(
            `${JSON.stringify(pattern)} leads through a symbolic link to ${path.resolve(options.root, found[0]!)}, ` +
              `outside --root ${options.root}; run from a root that contains it`,
          );
        throw new ConfigError(
          `no test file at ${JSON.stringify(pattern)} under ${options.root} (a PATTERN is a path or a glob relative ` +
            `to --root)`,
        );
      }
      excluded.push({
        file: pattern,
        reason: "pattern matched no file (node_modules, .git and .shardguard are never searched)",
      });
    }
    for (const match of matches) {
      const rel = match.split(path.sep).join("/");
      if (included.has(rel)) continue;
      included.set(rel, pattern === glob ? `matches ${pattern}` : `matches ${pattern} (${glob})`);
    }
  }
  if (included.size === 0) {
    throw new ConfigError(
      `no test files matched ${patterns.map((p) => JSON.stringify(p)).join(", ")} under ${options.root}`,
    );
  }
  const files = [...included.keys()].sort(compareStable);
  if (options.out !== undefined) refuseOutAmongTests(options.root, options.out, files);
  return {
    root: options.root,
    patterns,
    shards: groupIntoShards(files, options.filesPerShard, {
      batching: options.batching,
      alone: exclusiveMatcher(options.exclusive),
    }),
    included,
    excluded,
  };
}

/** Refuses an absolute `out` that is or holds a planned file (`files` root-relative): reports would land among tests.
 * @throws ConfigError naming `--out` and the planned files it holds */
export function refuseOutAmongTests(root: string, out: string, files: Iterable<string>): void {
  const inside = (f: string) => {
    const abs = path.resolve(root, f);
    return abs === out || abs.startsWith(out.endsWith(path.sep) ? out : out + path.sep);
  };
  const hidden = [...files].filter(inside);
  if (hidden.length === 0) return;
  const named = hidden.slice(0, 3).join(", ") + (hidden.length > 3 ? ` and ${hidden.length - 3} more` : "");
  const what =
    hidden.length === 1 && path.resolve(root, hidden[0]!) === out
      ? "is the planned test file"
      : `holds ${plural(hidden.length, "planned test file")}:`;
  throw new ConfigError(
    `--out ${out} ${what} ${named}; reports and logs go to --out, so it must hold no test file (choose another, e.g. ` +
      `the default .shardguard)`,
  );
}

/** Runs a tree search, turning an fs error with a path (EACCES, ELOOP, ...) into a ConfigError naming it:
 * a run that skipped an unreadable directory would plan fewer files than exist. */
export function readingTree<T>(root: string, search: () => T): T {
  try {
    return search();
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (typeof e?.code !== "string" || typeof e.path !== "string") throw error;
    const rel = path.relative(root, e.path.replace(/[\\/]+$/, "")) || ".";
    const where = rel.startsWith("..") || path.isAbsolute(rel) ? e.path : rel.split(path.sep).join("/");
    throw new ConfigError(
      `cannot read ${JSON.stringify(where)} under --root ${root} while looking for test files: ${e.code} ` +
        `(${e.syscall ?? "read"}); make it readable, or name the test files or directories to run as PATTERNs`,
    );
  }
}

/** Byte-wise comparison: the same order on every machine and locale. */
function compareStable(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The directory to walk ("" for the root) when `glob` is the default pattern under a plain one; else null. */
function walkableDir(glob: string): string | null {
  if (glob === DEFAULT_PATTERN) return "";
  if (!glob.endsWith(`/${DEFAULT_PATTERN}`)) return null;
  const dir = glob.slice(0, -DEFAULT_PATTERN.length - 1);
  const plain =
    isPlainPath(dir) && dir.split("/").every((part) => part !== "" && !part.startsWith(".") && part !== "node_modules");
  return plain ? dir : null;
}

/** The extra ignores as directories for the walk (`DIR/**` with a plain DIR); null when one is not of that form. */
function walkableIgnores(ignore: readonly string[]): string[] | null {
  const dirs: string[] = [];
  for (const glob of ignore) {
    const dir = glob.endsWith("/**") ? glob.slice(0, -3) : "";
    if (dir === "" || !isPlainPath(dir)) return null;
    dirs.push(dir);
  }
  return dirs;
}

function expandPattern(root: string, pattern: string): string {
  const clean = pattern.replace(/\\/g, "/").replace(/^\.\//, "");
  // Bun would name a file outside the root unlike the plan, so its tests could not be matched to it.
  const relative = path.relative(root, path.resolve(root, clean.split(/[*?{[]/)[0] ?? clean));
  if (relative === ".." || relative.startsWith(`..${path.sep}`)) {
    throw new ConfigError(
      `pattern ${JSON.stringify(pattern)} reaches outside --root ${root}; run from a root that contains every test ` +
        `file`,
    );
  }
  // An existing path is meant as written, glob characters and all (`[id].test.ts`, a route file name).
  const full = path.resolve(root, clean);
  let stat: ReturnType<typeof statSync> | undefined;
  try {
    stat = statSync(full, { throwIfNoEntry: false });
  } catch {
    // Not reachable (EACCES, ENAMETOOLONG): read as a glob.
  }
  if (stat?.isDirectory()) {
    const rel = path.relative(root, full).split(path.sep).join("/");
    return rel === "" ? DEFAULT_PATTERN : `${escapePath(rel)}/${DEFAULT_PATTERN}`;
  }
  if (stat === undefined && !isPlainPath(clean) && fg().isDynamicPattern(clean)) return clean;
  if (path.isAbsolute(clean)) return escapePath(path.relative(root, clean).split(path.sep).join("/"));
  return escapePath(clean);
}

/** fast-glob's escapePath, without loading it for a path that has nothing to escape. */
function escapePath(text: string): string {
  return isPlainPath(text) ? text : fg().escapePath(text);
}

/** Matches exclusive files; micromatch (util/glob-match.ts) is loaded only when the run names some. */
function exclusiveMatcher(globs: readonly string[] | undefined): ((file: string) => boolean) | undefined {
  if (!globs?.length) return undefined;
  return (require("../util/glob-match.ts") as typeof import("../util/glob-match.ts")).globMatcher(globs);
}

/** Groups sorted, deduplicated files into shards of `size` files, or "auto" batches (plan/auto-batch.ts);
 * `options.alone` files (exclusive) get a shard each, the rest batch as if absent, all in first-file order. */
export function groupIntoShards(
  files: readonly string[],
  size: number | "auto",
  options: { batching?: AutoBatchInputs; alone?: (file: string) => boolean } = {},
): PlannedShard[] {
  const { alone } = options;
  const single = alone ? files.filter(alone) : [];
  const batched = single.length > 0 ? files.filter((f) => !alone!(f)) : files;
  const groups: string[][] = single.map((f) => [f]);
  if (size === "auto") {
    groups.push(...autoBatches(batched, options.batching ?? { durations: new Map(), jobs: 1 }).groups);
  } else {
    const per = Math.max(1, Math.floor(size));
    for (let i = 0; i < batched.length; i += per) groups.push(batched.slice(i, i + per));
  }
  if (single.length > 0) groups.sort((a, b) => compareStable(a[0]!, b[0]!));
  const shards: PlannedShard[] = groups.map((group, i) => ({ index: i + 1, slug: shardSlug(group), files: group }));
  // Slugs name per-shard directories, so colliding ones (Foo_bar, foo-bar) get a stable hash of their paths.
  const count = new Map<string, number>();
  for (const shard of shards) count.set(shard.slug, (count.get(shard.slug) ?? 0) + 1);
  for (const shard of shards) {
    if ((count.get(shard.slug) ?? 0) > 1) shard.slug = `${shard.slug.slice(0, 71)}-${pathHash(shard.files)}`;
  }
  return shards;
}

/** 8 hex digits of SHA-256 over the paths: short, stable, different for different files. */
function pathHash(files: readonly string[]): string {
  return sha256Hex(files.join("\n")).slice(0, 8);
}

const TEST_SUFFIX = /([._](test|spec))?\.(ts|tsx|js|jsx|mjs|cjs)$/;

/** A stable, filesystem-safe shard name from its first file (+ "-and-N-more"); long ones are cut and hashed. */
export function shardSlug(files: readonly string[]): string {
  const first = (files[0] ?? "shard").replace(TEST_SUFFIX, "");
  let slug =
    first
      .replace(/[^A-Za-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .toLowerCase() || "shard";
  if (files.length > 1) slug += `-and-${files.length - 1}-more`;
  if (slug.length > 80) slug = `${slug.slice(0, 71)}-${pathHash(files)}`;
  return slug;
}
