/**
 * The presets of a project: built-ins plus `[shardguard.presets]` tables of bunfig.toml. `extends` (implicit for
 * a built-in's name) merges tables key by key; arrays and plain values replace. The result is validated whole.
 */
import path from "node:path";
import fg from "fast-glob";
import { readBunfigTable } from "../config/load.ts";
import { ConfigError } from "../config/settings-schema.ts";
import { ALWAYS_IGNORED, readingTree } from "../plan/plan.ts";
import { BUILTIN_PRESETS } from "./builtin.ts";
import { parsePreset, type Preset } from "./preset-schema.ts";

/** Every preset known in a root, user presets first (in bunfig.toml order), then built-ins. */
export interface PresetCatalog {
  presets: Map<string, Preset>;
  /** bunfig.toml read, or null when the root has none. */
  bunfigFile: string | null;
}

type Table = Record<string, unknown>;

function isTable(value: unknown): value is Table {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Key-by-key merge: nested tables merge, everything else in `over` replaces `base`. */
export function mergeTables(base: Table, over: Table): Table {
  const out: Table = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isTable(prev) && isTable(value) ? mergeTables(prev, value) : value;
  }
  return out;
}

/**
 * Loads the built-in presets and the user presets of `root`'s bunfig.toml.
 * @throws ConfigError (one line) for unreadable TOML, a bad `presets` table, an unknown or cyclic `extends`,
 *   or a schema failure
 */
export function loadPresets(root: string): PresetCatalog {
  const bunfig = readBunfigTable(root);
  const file = bunfig.file ? path.basename(bunfig.file) : "bunfig.toml";
  const userRaw = bunfig.table.presets;
  const user: Record<string, Table> = {};
  if (userRaw !== undefined) {
    if (!isTable(userRaw))
      throw new ConfigError(
        `invalid ${file} [shardguard] presets: expected a table of [shardguard.presets.NAME] tables`,
      );
    for (const [name, table] of Object.entries(userRaw)) {
      if (!isTable(table)) throw new ConfigError(`invalid ${file} [shardguard.presets.${name}]: expected a table`);
      user[name] = table;
    }
  }

  /** The raw, merged table of a preset; `chain` detects cycles. */
  const rawOf = (name: string, chain: string[]): Table => {
    if (chain.includes(name))
      throw new ConfigError(
        `invalid ${file} [shardguard.presets.${chain[0]}] extends: cycle ${[...chain, name].join(" -> ")}`,
      );
    const own = user[name];
    const builtin = BUILTIN_PRESETS[name];
    if (!own) {
      if (builtin) return { ...builtin };
      throw new ConfigError(
        `invalid ${file} [shardguard.presets.${chain[chain.length - 1]}] extends ${JSON.stringify(name)}: no such ` +
          `preset; accepted: ${allNames().join(", ")}`,
      );
    }
    const { extends: parent, ...rest } = own;
    if (parent !== undefined && (typeof parent !== "string" || parent === "")) {
      throw new ConfigError(
        `invalid ${file} [shardguard.presets.${name}] extends ${JSON.stringify(parent)}: expected a preset name`,
      );
    }
    if (typeof parent === "string") {
      // A table that names its own built-in ("gstack-paid" extends "gstack-paid") extends the built-in.
      const base = parent === name && builtin ? { ...builtin } : rawOf(parent, [...chain, name]);
      return mergeTables(base, rest);
    }
    return builtin ? mergeTables(builtin, rest) : rest;
  };
  const allNames = () => [...new Set([...Object.keys(user), ...Object.keys(BUILTIN_PRESETS)])];

  const presets = new Map<string, Preset>();
  for (const name of allNames()) {
    const own = user[name];
    const where = own ? `${file} [shardguard.presets.${name}]` : `built-in preset ${name}`;
    const parent = typeof own?.extends === "string" ? own.extends : own && BUILTIN_PRESETS[name] ? name : null;
    const source = own
      ? `${file}${parent ? `, extends ${parent === name ? "the built-in" : parent}` : ""}`
      : "built-in";
    presets.set(name, parsePreset(name, rawOf(name, []), where, source));
  }
  return { presets, bunfigFile: bunfig.file };
}

/**
 * The preset called `name`.
 * @throws ConfigError naming the accepted presets when there is none by that name
 */
export function getPreset(catalog: PresetCatalog, name: string, source = "--preset"): Preset {
  const preset = catalog.presets.get(name);
  if (!preset) {
    throw new ConfigError(
      `invalid ${source} ${JSON.stringify(name)}: no such preset; accepted: ${[...catalog.presets.keys()].join(", ")}`,
    );
  }
  return preset;
}

/**
 * Files of a preset under `root`: its globs expanded (never node_modules, .git, .shardguard), root-relative with
 * forward slashes, sorted byte-wise.
 * @throws ConfigError when a directory cannot be read
 */
export function presetFiles(preset: Preset, root: string, ignore: readonly string[] = []): string[] {
  const found = readingTree(root, () =>
    fg.sync(preset.globs, {
      cwd: root,
      ignore: [...ALWAYS_IGNORED, ...ignore],
      onlyFiles: true,
      dot: false,
      followSymbolicLinks: false,
    }),
  );
  return [...new Set(found.map((f) => f.split(path.sep).join("/")))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
