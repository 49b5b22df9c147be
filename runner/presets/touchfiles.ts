/**
 * The touchfiles data of diff-based selection: loading it (now, and as it
 * was at the base ref), the local files its module is built from, and the
 * per-test difference between two versions of it (the "map diff").
 *
 * Why the map diff: a project keeps its test → dependency map in a module
 * (gstack: test/helpers/touchfiles.ts re-exporting the literals of
 * test/helpers/touchfiles-data.ts). An edit to that data changes which files
 * a test depends on, or its tier, and names no dependency glob itself, so
 * plain glob matching selects nothing for it. The reference paid-tier runner
 * loads the old data from git and selects the tests whose entries changed;
 * this does the same for the module and everything it imports locally, and
 * runs everything when the old version cannot be loaded (never less work).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readRegularTextSync } from "../util/regular-file.ts";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { ConfigError } from "../config/settings-schema.ts";
import { withoutDebuggerEnv } from "../exec/bun-command.ts";
import type { SelectionSpec } from "./preset-schema.ts";

/** The dependency data of a project's tests. */
export interface Touchfiles {
  /** Test name → globs (root-relative) of the files it depends on. */
  map: Record<string, string[]>;
  /** Globs whose change selects every test. */
  global: string[];
  /** Every known test name: keys of the map and of the extra name maps. */
  names: string[];
  /** Root-relative path of the file the data came from. */
  file: string;
  /**
   * The per-test tables compared by the map diff: the touchfiles export and
   * each extra name export present (gstack: E2E_TOUCHFILES, E2E_TIERS), by
   * export name.
   */
  tables: Record<string, Record<string, unknown>>;
  /**
   * Root-relative files the data is built from: `file` first, then every
   * local module it imports, directly or not (relative specifiers only;
   * packages are not followed). An edit to any of them goes through the map diff.
   */
  sources: string[];
}

const StringListMap = z.record(z.string(), z.array(z.string()));

/** Takes the configured exports out of a loaded module (or parsed JSON). */
function extract(
  mod: Record<string, unknown>,
  spec: SelectionSpec,
  where: string,
  file: string,
  sources: string[],
): Touchfiles {
  const take = <T>(key: string, schema: z.ZodType<T>, expected: string): T => {
    const parsed = schema.safeParse(mod[key]);
    if (!parsed.success) throw new ConfigError(`invalid ${where} export ${key}: expected ${expected}`);
    return parsed.data;
  };
  const map = take(spec.touchfilesExport, StringListMap, "an object of test name → array of globs");
  const global = take(spec.globalExport, z.array(z.string()), "an array of globs");
  const names = new Set(Object.keys(map));
  const tables: Record<string, Record<string, unknown>> = { [spec.touchfilesExport]: map };
  for (const key of spec.namesExports) {
    if (mod[key] === undefined) continue;
    const table = take(key, z.record(z.string(), z.unknown()), "an object keyed by test name");
    tables[key] = table;
    for (const n of Object.keys(table)) names.add(n);
  }
  return { map, global, names: [...names], file, tables, sources };
}

/** Wall-clock limit of loading one version of a touchfiles module, ms. */
export const TOUCHFILES_LOAD_TIMEOUT_MS = 30_000;

/** Largest JSON a touchfiles module may export, bytes (64 MiB; gstack's is about 40 KiB). */
const MAX_EXPORT_BYTES = 64 * 1024 * 1024;

/**
 * Prints a module's exports as JSON. Run by a separate Bun process, so a
 * module that hangs (a top-level await on the network), exits or leaves
 * side effects cannot stall or change the run that plans: it is killed
 * after the timeout. Functions and other non-JSON exports drop out, which
 * only the configured exports' shape checks can notice.
 */
const LOADER = `const m = await import(process.env.SHARDGUARD_TOUCHFILES_URL); process.stdout.write(JSON.stringify({ ...m }));`;

/**
 * The exports of a touchfiles module (or a parsed JSON file), as JSON values.
 *
 * @param timeoutMs wall-clock limit of the loading process, ms
 * @throws Error with one line saying why: the module threw or exited, timed out, or exported no JSON
 */
function importData(abs: string, timeoutMs: number): Record<string, unknown> {
  if (abs.endsWith(".json")) return JSON.parse(readRegularTextSync(abs)) as Record<string, unknown>;
  // cwd is the temp dir, not the project: a bunfig.toml there must not preload anything into the loader.
  const r = spawnSync(process.execPath, ["-e", LOADER], {
    cwd: os.tmpdir(),
    // Without a debugger's BUN_INSPECT: the loader would fail to listen where this process does.
    env: { ...withoutDebuggerEnv(process.env), SHARDGUARD_TOUCHFILES_URL: pathToFileURL(abs).href },
    timeout: timeoutMs,
    killSignal: "SIGKILL",
    maxBuffer: MAX_EXPORT_BYTES,
    encoding: "utf8",
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === "ETIMEDOUT")
    throw new Error(`it did not finish loading within ${timeoutMs / 1000}s`);
  if (r.error) throw r.error;
  if (r.status !== 0) {
    const lines = (r.stderr ?? "")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    const why = lines.find((l) => /^(error|\w*Error)\b/.test(l)) ?? lines.at(-1) ?? `exit ${r.status ?? r.signal}`;
    throw new Error(why);
  }
  try {
    return JSON.parse(r.stdout) as Record<string, unknown>;
  } catch {
    throw new Error("its exports are not JSON (did it print to stdout?)");
  }
}

const toPosix = (p: string) => p.split(path.sep).join("/");

/**
 * The module `file` (root-relative) and the local modules it imports,
 * transitively: relative specifiers resolved by Bun from each importer,
 * kept when they resolve to a file inside `root` outside node_modules.
 * Type-only imports are not followed (they are erased). A JSON file is its
 * own closure.
 *
 * @returns root-relative paths, `file` first, the rest sorted
 */
export function moduleClosure(root: string, file: string): string[] {
  const seen = new Set<string>([file]);
  const queue = [file];
  const transpiler = new Bun.Transpiler({ loader: "ts" });
  while (queue.length > 0) {
    const rel = queue.shift()!;
    if (rel.endsWith(".json")) continue;
    const abs = path.join(root, rel);
    let specifiers: string[];
    try {
      specifiers = transpiler.scanImports(readRegularTextSync(abs)).map((i) => i.path);
    } catch {
      continue; // unreadable or unparsable: loading the module reports it
    }
    for (const spec of specifiers) {
      if (!spec.startsWith("./") && !spec.startsWith("../")) continue;
      let resolved: string;
      try {
        resolved = Bun.resolveSync(spec, path.dirname(abs));
      } catch {
        continue;
      }
      const next = toPosix(path.relative(root, resolved));
      if (next.startsWith("..") || path.isAbsolute(next) || next.split("/").includes("node_modules") || seen.has(next))
        continue;
      seen.add(next);
      queue.push(next);
    }
  }
  const [first, ...rest] = [...seen];
  return [first!, ...rest.sort()];
}

/**
 * Loads the touchfiles data as it is in the working tree: imports a module
 * (`.ts`, `.js`, …) in a separate Bun process killed after `timeoutMs`, or
 * reads a JSON file, and takes the configured exports.
 *
 * @returns null when there is no such file (the caller then runs everything)
 * @throws ConfigError when the file cannot be loaded, or the map or global
 *   export is missing or not of the expected shape (extra name exports are optional)
 */
export async function loadTouchfiles(
  root: string,
  spec: SelectionSpec,
  timeoutMs = TOUCHFILES_LOAD_TIMEOUT_MS,
): Promise<Touchfiles | null> {
  const abs = path.resolve(root, spec.touchfiles);
  const where = `selection touchfiles ${JSON.stringify(spec.touchfiles)}`;
  // No module at all: selection is simply not set up in this repository.
  // Running everything is the fail-open direction (extra work, never less).
  if (!existsSync(abs)) return null;
  let mod: Record<string, unknown>;
  try {
    mod = importData(abs, timeoutMs);
  } catch (error) {
    throw new ConfigError(`invalid ${where}: could not load it (${String((error as Error).message).split("\n")[0]})`);
  }
  const file = toPosix(path.relative(root, abs));
  return extract(mod, spec, where, file, moduleClosure(root, file));
}

/**
 * Loads the touchfiles data as it was at git ref `ref`: every file of
 * `now.sources` that exists at `ref` is written, at its root-relative path,
 * into a temp directory (removed afterwards), and the module is imported
 * from there. A file the old module imports but the current one does not is
 * missing there, so the import fails; packages do not resolve from the temp
 * directory either. Both end in "cannot load", and the caller runs everything.
 *
 * @returns the old data, or a phrase saying why it could not be loaded
 */
export async function loadTouchfilesAt(
  root: string,
  spec: SelectionSpec,
  ref: string,
  now: Touchfiles,
  timeoutMs = TOUCHFILES_LOAD_TIMEOUT_MS,
): Promise<Touchfiles | string> {
  const show = (file: string) =>
    spawnSync("git", ["show", `${ref}:${file}`], { cwd: root, timeout: 10_000, maxBuffer: 64 * 1024 * 1024 });
  const tmp = mkdtempSync(path.join(os.tmpdir(), "shardguard-touchfiles-"));
  try {
    for (const file of now.sources) {
      const r = show(file);
      if (r.status !== 0) {
        if (file === now.file) return `${file} does not exist at ${ref}`;
        continue;
      }
      const to = path.join(tmp, file);
      mkdirSync(path.dirname(to), { recursive: true });
      writeFileSync(to, r.stdout);
    }
    let mod: Record<string, unknown>;
    try {
      mod = importData(path.join(tmp, now.file), timeoutMs);
    } catch (error) {
      return `its version at ${ref} could not be loaded (${String((error as Error).message).split("\n")[0]})`;
    }
    try {
      return extract(mod, spec, `${now.file} at ${ref}`, now.file, now.sources);
    } catch (error) {
      return (error as Error).message;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Compares two versions of the touchfiles data, test by test (the rule of
 * the reference runner): a name is changed when it was added to a table,
 * its value in a table differs, or it left one table but is still in
 * another; a name gone from every table is removed (there is no test left
 * to run). The global globs are compared as a set.
 */
export function diffTouchfiles(
  before: Touchfiles,
  after: Touchfiles,
): { changed: string[]; removed: string[]; globalChanged: boolean } {
  const changed = new Set<string>();
  const left = new Set<string>();
  const keys = new Set([...Object.keys(before.tables), ...Object.keys(after.tables)]);
  for (const key of keys) {
    const old = before.tables[key] ?? {};
    const now = after.tables[key] ?? {};
    for (const name of Object.keys(now)) {
      if (!(name in old) || JSON.stringify(old[name]) !== JSON.stringify(now[name])) changed.add(name);
    }
    for (const name of Object.keys(old)) if (!(name in now)) left.add(name);
  }
  const removed: string[] = [];
  for (const name of left) {
    if (Object.values(after.tables).some((t) => name in t)) changed.add(name);
    else removed.push(name);
  }
  const set = (globs: string[]) => JSON.stringify([...new Set(globs)].sort());
  return {
    changed: [...changed].sort(),
    removed: removed.sort(),
    globalChanged: set(before.global) !== set(after.global),
  };
}
