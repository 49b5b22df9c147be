/**
 * The touchfiles data of diff-based selection: loading it (now and at the base), its local sources, and the map
 * diff. An edit to the data names no dependency glob itself, so the tests whose entries changed are selected;
 * an old version that cannot load runs everything.
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
  /** The per-test tables the map diff compares, by export name (gstack: E2E_TOUCHFILES, E2E_TIERS). */
  tables: Record<string, Record<string, unknown>>;
  /**
   * Root-relative files the data is built from: `file`, then every local module it imports (relative specifiers
   * only); an edit to any of them goes through the map diff.
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

/** Largest JSON a touchfiles module may export, bytes: far above a real map, a bound on a runaway export. */
const MAX_EXPORT_BYTES = 64 * 1024 * 1024;

/**
 * Prints a module's exports as JSON, in its own Bun process: a module that hangs, exits or has side effects
 * cannot stall or change the planning run. Non-JSON exports drop out.
 */
const LOADER =
  `const m = await import(process.env.SHARDGUARD_TOUCHFILES_URL); ` + `process.stdout.write(JSON.stringify({ ...m }));`;

/**
 * The exports of a touchfiles module (or parsed JSON); `timeoutMs` bounds the loading process.
 * @throws Error with one line: the module threw or exited, timed out, or exported no JSON
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
 * The module `file` and the local modules it imports transitively (resolved by Bun, inside `root`, not
 * node_modules, type-only imports erased).
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
 * Loads the touchfiles data of the working tree (a module in a Bun process killed after `timeoutMs`, or JSON).
 * @returns null when there is no such file (the caller then runs everything)
 * @throws ConfigError when it cannot load, or the map or global export is missing or misshapen
 */
export async function loadTouchfiles(
  root: string,
  spec: SelectionSpec,
  timeoutMs = TOUCHFILES_LOAD_TIMEOUT_MS,
): Promise<Touchfiles | null> {
  const abs = path.resolve(root, spec.touchfiles);
  const where = `selection touchfiles ${JSON.stringify(spec.touchfiles)}`;
  // No module: selection is not set up here; running everything is the fail-open direction.
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
 * Loads the data at git ref `ref`: `now.sources` as they were, in a temp directory, and the module imported from
 * there. What does not resolve there ends in "cannot load", and the caller runs everything.
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
 * Compares two versions test by test (the reference runner's rule): added, changed, or left one table but still
 * in another is changed; gone from every table is removed. The global globs compare as a set.
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
