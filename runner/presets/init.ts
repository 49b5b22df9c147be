/**
 * `shardguard init [--preset NAME] [--dry-run]`: the idempotent, reported edits of docs/presets.md,
 * "What `shardguard init` does" (preload, entry test file, package.json script, .gitignore).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "../config/settings-schema.ts";
import { getPreset, loadPresets } from "./resolve.ts";
import { PACKAGE_ROOT } from "../util/package-root.ts";

/** Directory of the installed shardguard package. */
const PACKAGE_DIR = PACKAGE_ROOT;

/** First line of every entry file; marks the file as ours. */
export const ENTRY_MARKER = "// Written by `shardguard init";

/** One file init creates, changes or leaves alone. */
export interface InitChange {
  /** Root-relative path. */
  file: string;
  action: "create" | "update" | "unchanged" | "kept";
  /** One human sentence. */
  detail: string;
  /** New content for create / update. */
  content?: string;
  /** What to show for --dry-run (the changed lines). */
  preview?: string;
}

/** How the project refers to shardguard: through node_modules, or by a path to this install. */
export interface ShardguardRef {
  /** Value for bunfig.toml's `[test] preload`. */
  preload: string;
  /** Import specifier of preset/entry.ts from a file in `fromDir`. */
  entryImport: (fromDir: string) => string;
  /** False when the project has no node_modules/shardguard. */
  installed: boolean;
}

/** Picks how `root` refers to shardguard. */
export function shardguardRef(root: string): ShardguardRef {
  if (existsSync(path.join(root, "node_modules", "shardguard", "package.json"))) {
    return {
      preload: "shardguard/preset/preload.ts",
      entryImport: () => "shardguard/preset/entry.ts",
      installed: true,
    };
  }
  const rel = (from: string, file: string) => {
    const r = path.relative(from, path.join(PACKAGE_DIR, file)).split(path.sep).join("/");
    return r.startsWith(".") ? r : `./${r}`;
  };
  return {
    preload: rel(root, "preset/preload.ts"),
    entryImport: (fromDir) => rel(fromDir, "preset/entry.ts"),
    installed: false,
  };
}

/** True for preload entries that are shardguard's preload, however written. */
function isOurPreload(entry: string, root: string, ref: ShardguardRef): boolean {
  if (entry === ref.preload || /(^|\/)shardguard\/preset\/preload\.ts$/.test(entry)) return true;
  return path.resolve(root, entry) === path.join(PACKAGE_DIR, "preset", "preload.ts");
}

/** Index just past the TOML string starting at `i` (basic or literal, single-line or multi-line). */
function skipString(text: string, i: number): number {
  const q = text[i]!;
  const triple = text.startsWith(q.repeat(3), i);
  const close = triple ? q.repeat(3) : q;
  let j = i + close.length;
  while (j < text.length) {
    if (q === '"' && text[j] === "\\") {
      j += 2;
      continue;
    }
    if (text.startsWith(close, j)) return j + close.length;
    j++;
  }
  throw new ConfigError("bunfig.toml: unterminated string in [test] preload");
}

/**
 * Adds `spec` to `[test] preload` in bunfig.toml text, keeping everything else byte for byte (checked by parsing).
 *
 * @param text the current file, or null when there is none
 * @returns the new text, or null when `spec` (or another form of our preload) is already there
 * @throws ConfigError when the file is not valid TOML or `test` is written in a form this edit does not handle
 */
export function addPreload(
  text: string | null,
  spec: string,
  isOurs: (entry: string) => boolean = (e) => e === spec,
): string | null {
  const line = `preload = [${JSON.stringify(spec)}]`;
  if (text === null || text.trim() === "") return `[test]\n${line}\n`;
  const before = parseBunfig(text);
  const test = before.test as Record<string, unknown> | undefined;
  const current = test?.preload;
  const list = typeof current === "string" ? [current] : Array.isArray(current) ? (current as unknown[]) : [];
  if (list.some((e) => typeof e === "string" && isOurs(e))) return null;
  if (current !== undefined && typeof current !== "string" && !Array.isArray(current)) {
    throw new ConfigError(
      `bunfig.toml: [test] preload ${JSON.stringify(current)} is neither a string nor an array; add ` +
        `${JSON.stringify(spec)} by hand`,
    );
  }

  let next: string;
  const header = /^[ \t]*\[[ \t]*test[ \t]*\][ \t]*(#.*)?$/m.exec(text);
  if (!header) {
    if (test !== undefined) {
      throw new ConfigError(`bunfig.toml: "test" is not written as a [test] table; add ${line} to it by hand`);
    }
    next = `${text}${text.endsWith("\n") ? "" : "\n"}\n[test]\n${line}\n`;
  } else {
    const sectionStart = header.index + header[0].length;
    const rest = text.slice(sectionStart);
    const nextHeader = /^[ \t]*\[/m.exec(rest.slice(1));
    const sectionEnd = nextHeader ? sectionStart + 1 + nextHeader.index : text.length;
    const section = text.slice(sectionStart, sectionEnd);
    const key = /^[ \t]*preload[ \t]*=[ \t]*/m.exec(section);
    if (!key) {
      next = `${text.slice(0, sectionStart)}\n${line}${text.slice(sectionStart)}`;
    } else {
      const valueAt = sectionStart + key.index + key[0].length;
      next = insertIntoValue(text, valueAt, spec);
    }
  }

  const after = parseBunfig(next);
  const newPreload = (after.test as Record<string, unknown> | undefined)?.preload;
  const expected = [...list, spec];
  const sameRest =
    canonical({ ...after, test: { ...(after.test as object), preload: null } }) ===
    canonical({ ...before, test: { ...(test ?? {}), preload: null } });
  if (!Array.isArray(newPreload) || JSON.stringify(newPreload) !== JSON.stringify(expected) || !sameRest) {
    throw new ConfigError(
      `bunfig.toml: could not add the preload safely; add ${JSON.stringify(spec)} to [test] preload by hand`,
    );
  }
  return next;
}

/** JSON with object keys sorted at every level: equal for equal TOML documents. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === "object" && !(v instanceof Date)
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sort(value));
}

/** Inserts `spec` into the preload value starting at `at` (a string or an array). */
function insertIntoValue(text: string, at: number, spec: string): string {
  const quoted = JSON.stringify(spec);
  const c = text[at];
  if (c === '"' || c === "'") {
    const end = skipString(text, at);
    return `${text.slice(0, at)}[${text.slice(at, end)}, ${quoted}]${text.slice(end)}`;
  }
  if (c !== "[")
    throw new ConfigError(`bunfig.toml: [test] preload is not a string or an array; add ${quoted} by hand`);
  let i = at + 1;
  let lastSignificant = -1; // index just past the last value character inside the array
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '"' || ch === "'") {
      i = skipString(text, i);
      lastSignificant = i;
      continue;
    }
    if (ch === "#") {
      while (i < text.length && text[i] !== "\n") i++;
      continue;
    }
    if (ch === "]") break;
    if (!/\s/.test(ch)) lastSignificant = i + 1;
    i++;
  }
  if (i >= text.length) throw new ConfigError("bunfig.toml: unterminated [test] preload array");
  if (lastSignificant < 0) return `${text.slice(0, at + 1)}${quoted}${text.slice(i)}`;
  const sep = text[lastSignificant - 1] === "," ? " " : ", ";
  return `${text.slice(0, lastSignificant)}${sep}${quoted}${text.slice(lastSignificant)}`;
}

function parseBunfig(text: string): Record<string, unknown> {
  try {
    return Bun.TOML.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`bunfig.toml is not valid TOML: ${String((error as Error).message).split("\n")[0]}`);
  }
}

/** Content of the entry test file for preset `name`, living in `entryDir` of `root`. */
export function entryFileContent(name: string, root: string, entryDir: string, ref: ShardguardRef): string {
  const toRoot = path.relative(entryDir, root).split(path.sep).join("/") || ".";
  return [
    `${ENTRY_MARKER} --preset ${name}\`. Keep it: \`bun test --preset ${name}\` needs a`,
    `// test file whose path contains "${name}", or Bun stops before shardguard's preload`,
    `// runs. Under plain \`bun test\` it is a cheap check of the preset.`,
    `import { expect, test } from "bun:test";`,
    `import path from "node:path";`,
    `import { checkPresetEntry } from ${JSON.stringify(ref.entryImport(entryDir))};`,
    ``,
    `test(${JSON.stringify(`shardguard preset ${name} resolves and matches at least one file`)}, () => {`,
    `  const root = path.join(import.meta.dir, ${JSON.stringify(toRoot)});`,
    `  expect(checkPresetEntry(${JSON.stringify(name)}, root).files.length).toBeGreaterThan(0);`,
    `});`,
    ``,
  ].join("\n");
}

/** package.json text with script `name` added (indentation kept), or null when unchanged / kept. */
export function addScript(
  text: string,
  name: string,
  command: string,
): { text: string | null; existing: string | null } {
  let pkg: Record<string, unknown>;
  try {
    pkg = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`package.json is not valid JSON: ${(error as Error).message}`);
  }
  const scripts = (pkg.scripts ?? {}) as Record<string, unknown>;
  if (typeof scripts !== "object" || Array.isArray(scripts))
    throw new ConfigError(`package.json: "scripts" is not an object`);
  const existing = scripts[name];
  if (existing !== undefined) return { text: null, existing: String(existing) };
  pkg.scripts = { ...scripts, [name]: command };
  const indent = /^([ \t]+)"/m.exec(text)?.[1] ?? "  ";
  return { text: JSON.stringify(pkg, null, indent) + (text.endsWith("\n") ? "\n" : ""), existing: null };
}

/**
 * Works out what init would change in `root`; reads only.
 * @throws ConfigError where `root` has no package.json (init edits a project; elsewhere its paths would point
 *   wrong), for an unknown preset, an unusable preset name, or files init cannot edit safely
 */
export function planInit(root: string, presetName: string | null): { changes: InitChange[]; ref: ShardguardRef } {
  if (!existsSync(path.join(root, "package.json"))) {
    throw new ConfigError(
      `init: ${root} has no package.json; run it in the project's root (where package.json is) or pass --root DIR`,
    );
  }
  const ref = shardguardRef(root);
  // 1. bunfig.toml and .gitignore, with or without a preset.
  const bunfig = bunfigChange(root, ref);
  const changes: InitChange[] = [bunfig.change, gitignoreChange(root)];
  if (presetName === null) return { changes, ref };

  // 2. The preset name must be usable in a file name; presets as they will be (bunfig.toml may not exist yet).
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(presetName)) {
    throw new ConfigError(
      `invalid --preset ${JSON.stringify(presetName)}: init needs a name of letters, digits, ".", "_" and "-"`,
    );
  }
  const preset = getPreset(loadPresets(root), presetName);

  // 3. The entry test file, then package.json's script.
  changes.push(entryChange(root, presetName, testRootOf(bunfig.text), ref));
  changes.push(scriptChange(root, preset.script, `bun test --preset ${presetName}`));
  return { changes, ref };
}

/** Step 1 of docs/presets.md "What `shardguard init` does", and the bunfig.toml text as it will be. */
function bunfigChange(root: string, ref: ShardguardRef): { change: InitChange; text: string | null } {
  const bunfigPath = path.join(root, "bunfig.toml");
  const bunfigText = existsSync(bunfigPath) ? readFileSync(bunfigPath, "utf8") : null;
  const newBunfig = addPreload(bunfigText, ref.preload, (e) => isOurPreload(e, root, ref));
  if (newBunfig === null) {
    return {
      change: { file: "bunfig.toml", action: "unchanged", detail: "[test] preload already has shardguard's preload" },
      text: bunfigText,
    };
  }
  return {
    change: {
      file: "bunfig.toml",
      action: bunfigText === null ? "create" : "update",
      detail:
        bunfigText === null
          ? `[test] preload = [${JSON.stringify(ref.preload)}]`
          : `added ${JSON.stringify(ref.preload)} to [test] preload`,
      content: newBunfig,
      preview: addedLines(bunfigText, newBunfig),
    },
    text: newBunfig,
  };
}

/** Step 2 of docs/presets.md "What `shardguard init` does": kept when someone else wrote the file. */
function entryChange(root: string, presetName: string, testRoot: string, ref: ShardguardRef): InitChange {
  const entryRel = `${testRoot === "." ? "" : `${testRoot}/`}shardguard.${presetName}.test.ts`;
  const entryPath = path.join(root, entryRel);
  const content = entryFileContent(presetName, root, path.dirname(entryPath), ref);
  if (!existsSync(entryPath)) {
    return {
      file: entryRel,
      action: "create",
      detail: `entry file for \`bun test --preset ${presetName}\``,
      content,
      preview: content,
    };
  }
  const old = readFileSync(entryPath, "utf8");
  if (old === content) return { file: entryRel, action: "unchanged", detail: "entry file is up to date" };
  if (old.startsWith(ENTRY_MARKER))
    return { file: entryRel, action: "update", detail: "entry file rewritten", content, preview: content };
  return {
    file: entryRel,
    action: "kept",
    detail: "exists and was not written by shardguard init: left alone (its path already matches the preset name)",
  };
}

/** Step 3 of docs/presets.md "What `shardguard init` does": never replaces an existing script. */
function scriptChange(root: string, script: string, command: string): InitChange {
  const pkgPath = path.join(root, "package.json");
  const added = addScript(readFileSync(pkgPath, "utf8"), script, command);
  if (added.text !== null) {
    return {
      file: "package.json",
      action: "update",
      detail: `added script "${script}": "${command}"`,
      content: added.text,
      preview: `"${script}": "${command}"`,
    };
  }
  if (added.existing === command)
    return { file: "package.json", action: "unchanged", detail: `script "${script}" already runs the preset` };
  return {
    file: "package.json",
    action: "kept",
    detail:
      `script "${script}" exists and was kept (${JSON.stringify(added.existing)}); a command line naming only ` +
      `the preset's files is taken over anyway`,
  };
}

/** The .gitignore line init adds: the default output directory (reports and logs). */
export const GITIGNORE_ENTRY = ".shardguard/";

/**
 * .gitignore text with {@link GITIGNORE_ENTRY} appended, or null when a line already ignores it (with or without
 * leading or trailing "/"); `text` is null when there is no file.
 */
export function addGitignoreEntry(text: string | null): string | null {
  if (text === null) return `${GITIGNORE_ENTRY}\n`;
  if (text.split(/\r?\n/).some((l) => /^\/?\.shardguard\/?$/.test(l.trim()))) return null;
  return `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${GITIGNORE_ENTRY}\n`;
}

function gitignoreChange(root: string): InitChange {
  const file = path.join(root, ".gitignore");
  const text = existsSync(file) ? readFileSync(file, "utf8") : null;
  const next = addGitignoreEntry(text);
  if (next === null) return { file: ".gitignore", action: "unchanged", detail: `already ignores ${GITIGNORE_ENTRY}` };
  return {
    file: ".gitignore",
    action: text === null ? "create" : "update",
    detail: `ignores ${GITIGNORE_ENTRY} (shardguard's reports and logs)`,
    content: next,
    preview: GITIGNORE_ENTRY,
  };
}

/** `[test] root` of a bunfig.toml text, or "test" (shardguard's convention) when unset. */
function testRootOf(text: string | null): string {
  const root = text ? ((parseBunfig(text).test as Record<string, unknown> | undefined)?.root as unknown) : undefined;
  return typeof root === "string" && root !== "" ? root.replace(/^\.\//, "").replace(/\/+$/, "") || "." : "test";
}

/** The lines of `next` that `prev` does not have, for --dry-run. */
function addedLines(prev: string | null, next: string): string {
  const had = new Set((prev ?? "").split("\n"));
  return next
    .split("\n")
    .filter((l) => !had.has(l))
    .join("\n");
}

/** Applies (or, with `dryRun`, only describes) the changes, writing each file whole; returns the lines to print. */
export function applyInit(root: string, changes: readonly InitChange[], dryRun: boolean): string[] {
  const lines: string[] = [];
  const verb = (a: InitChange["action"]) =>
    dryRun
      ? { create: "would create", update: "would update", unchanged: "unchanged", kept: "kept" }[a]
      : { create: "created", update: "updated", unchanged: "unchanged", kept: "kept" }[a];
  for (const c of changes) {
    lines.push(`shardguard init: ${c.file}: ${verb(c.action)}: ${c.detail}`);
    if ((c.action === "create" || c.action === "update") && c.content !== undefined) {
      if (dryRun) {
        for (const l of (c.preview ?? c.content).trimEnd().split("\n")) lines.push(`    ${l}`);
      } else {
        const file = path.join(root, c.file);
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, c.content);
      }
    }
  }
  return lines;
}
