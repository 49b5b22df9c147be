/**
 * Diff-based selection (docs/presets.md, "Diff-based selection"). git failures fail closed (exit 2), so a broken
 * git never passes for "nothing changed"; the shard skip fails open, so a bug here can only add work.
 */
import { spawnSync } from "node:child_process";

import { readRegularTextSync } from "../util/regular-file.ts";
import path from "node:path";
import { ConfigError } from "../config/settings-schema.ts";
import type { PlannedShard } from "../plan/plan.ts";
import type { SelectionSpec } from "./preset-schema.ts";
import { diffTouchfiles, loadTouchfilesAt, type Touchfiles } from "./touchfiles.ts";
import { matchesGlob } from "../util/glob-match.ts";

export { matchesGlob };

export { loadTouchfiles, type Touchfiles } from "./touchfiles.ts";

/** The result of diff selection. */
export interface DiffSelection {
  /** Selected test names; null means run everything. */
  selected: Set<string> | null;
  /** One human phrase, e.g. "diff vs main: 2 changed files". */
  reason: string;
  /** Number of names in the touchfiles map. */
  total: number;
  /** Every changed file (root-relative), the selecting ones first, each group sorted; absent without a diff. */
  changed?: string[];
}

/** Runs git in `root`; any failure is a ConfigError (fail closed). */
function git(root: string, args: readonly string[]): string {
  const result = spawnSync("git", ["-c", "core.quotePath=false", ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 30_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error || result.status !== 0) {
    const why = (result.stderr ?? "").trim().split("\n")[0] || result.error?.message || `exit ${result.status}`;
    throw new ConfigError(
      `git ${args.join(" ")} failed in ${root} (${why}); diff-based selection fails closed: fix git, or set ` +
        `EVALS_ALL=1 to run everything`,
    );
  }
  return result.stdout;
}

/** The first ref of `candidates` that exists in the repository at `root`, or null. */
export function detectBase(root: string, candidates: readonly string[]): string | null {
  for (const ref of candidates) {
    const r = spawnSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
      cwd: root,
      stdio: "pipe",
      timeout: 10_000,
    });
    if (r.status === 0) return ref;
  }
  return null;
}

/**
 * Files changed relative to `base` (committed since the merge base, staged, unstaged, untracked), root-relative,
 * sorted.
 * @throws ConfigError on any git failure
 */
export function changedFiles(root: string, base: string): string[] {
  const lines = (text: string) =>
    text
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
  const committed = lines(git(root, ["diff", "--name-only", "--relative", `${base}...HEAD`]));
  const uncommitted = lines(git(root, ["diff", "--name-only", "--relative", "HEAD"]));
  const untracked = lines(git(root, ["ls-files", "--others", "--exclude-standard"]));
  return [...new Set([...committed, ...uncommitted, ...untracked])].sort();
}

/**
 * Computes the selection, in the reference runner's rule order (docs/presets.md, "Diff-based selection"),
 * with the map diff when a touchfiles source changed; anything unclear runs everything.
 *
 * @param ignore root-relative directory prefixes whose files never count as changes (shardguard's output directory)
 * @param loadAt loads the data at a ref (injectable for tests; default {@link loadTouchfilesAt})
 * @throws ConfigError on any git failure
 */
export async function computeSelection(inputs: {
  root: string;
  env: Record<string, string | undefined>;
  spec: SelectionSpec;
  touchfiles: Touchfiles;
  ignore?: readonly string[];
  loadAt?: typeof loadTouchfilesAt;
}): Promise<DiffSelection> {
  const { root, env, spec, touchfiles } = inputs;
  const total = Object.keys(touchfiles.map).length;
  if (env[spec.allEnv]) return { selected: null, reason: `run all (${spec.allEnv} is set)`, total };
  const base = env[spec.baseEnv] || detectBase(root, spec.baseCandidates) || spec.defaultBase;
  const ignore = inputs.ignore ?? [];
  const changed = changedFiles(root, base).filter((f) => !ignore.some((dir) => f === dir || f.startsWith(`${dir}/`)));
  if (changed.length === 0) return { selected: null, reason: `run all (no changes vs ${base})`, total };
  const globals = changed.filter((file) => touchfiles.global.some((g) => matchesGlob(file, g)));
  if (globals.length > 0) {
    return {
      selected: null,
      reason: `run all (global touchfile changed: ${globals[0]})`,
      total,
      changed: selectingFirst(changed, globals),
    };
  }
  const selected = new Set<string>();
  const selecting = new Set<string>();
  for (const [name, globs] of Object.entries(touchfiles.map)) {
    for (const f of changed) {
      if (globs.some((g) => matchesGlob(f, g))) {
        selected.add(name);
        selecting.add(f);
      }
    }
  }
  let mapNote = "";
  const sources = changed.filter((f) => touchfiles.sources.includes(f));
  if (sources.length > 0) {
    const what = `the touchfiles source${sources.length === 1 ? "" : "s"} ${sources.join(", ")} changed`;
    const before = await (inputs.loadAt ?? loadTouchfilesAt)(root, spec, base, touchfiles);
    if (typeof before === "string") {
      return {
        selected: null,
        reason: `run all (${what}; no map diff: ${before})`,
        total,
        changed: selectingFirst(changed, sources),
      };
    }
    const d = diffTouchfiles(before, touchfiles);
    if (d.globalChanged) {
      return {
        selected: null,
        reason: `run all (${what}: its global touchfiles differ from ${base})`,
        total,
        changed: selectingFirst(changed, sources),
      };
    }
    for (const name of d.changed) selected.add(name);
    if (d.changed.length > 0) for (const f of sources) selecting.add(f);
    const n = d.changed.length;
    mapNote =
      `; map diff of ${sources.join(", ")}: ${n} entr${n === 1 ? "y" : "ies"} ` +
      `changed${n > 0 ? ` (${cut(d.changed)})` : ""}`;
  }
  const ordered = selectingFirst(changed, [...selecting]);
  const n = changed.length;
  return {
    selected,
    reason: `diff vs ${base}: ${n} changed file${n === 1 ? "" : "s"} (${cut(ordered)})${mapNote}`,
    total,
    changed: ordered,
  };
}

/** The first three items, then "…" when there are more. */
function cut(items: readonly string[]): string {
  return items.slice(0, 3).join(", ") + (items.length > 3 ? ", …" : "");
}

/** `changed` with the files in `first` moved to the front (each group sorted): a cut list names what mattered. */
function selectingFirst(changed: readonly string[], first: readonly string[]): string[] {
  const lead = new Set(first);
  return [...changed.filter((f) => lead.has(f)).sort(), ...changed.filter((f) => !lead.has(f))];
}

/** The selection as children get it: `{"version":1,"selected":[…sorted…] | null,"reason":"…"}`; null runs all. */
export function serializeSelection(selection: DiffSelection): string {
  return JSON.stringify({
    version: 1,
    selected: selection.selected === null ? null : [...selection.selected].sort(),
    reason: selection.reason,
  });
}

/** Names of `names` that appear quoted ('x', "x" or `x`) in `source`. */
export function quotedNames(source: string, names: Iterable<string>): string[] {
  const hits: string[] = [];
  for (const n of names) {
    if (source.includes(`'${n}'`) || source.includes(`"${n}"`) || source.includes(`\`${n}\``)) hits.push(n);
  }
  return hits;
}

/** Whether one file's shard must run under a selection, and why. */
export interface FileDecision {
  file: string;
  kept: boolean;
  reason: string;
}

/** What {@link decideFile} needs besides the file. */
export interface DecideContext {
  root: string;
  spec: SelectionSpec;
  touchfiles: Touchfiles;
  /** Injectable source reader; a throw keeps the file. */
  read?: (file: string) => string;
}

/**
 * Decides one file: its mapped names are the known names quoted in its source plus the entries that list it. It is
 * skippable only when it matches the skippable pattern, is readable, has a mapped name, and none is selected.
 */
export function decideFile(file: string, selected: Set<string> | null, ctx: DecideContext): FileDecision {
  if (selected === null) return { file, kept: true, reason: "everything runs" };
  if (!new RegExp(ctx.spec.skippable).test(file)) {
    return { file, kept: true, reason: "outside the skippable naming pattern: always runs" };
  }
  let source: string;
  try {
    source = (ctx.read ?? ((f: string) => readRegularTextSync(path.join(ctx.root, f))))(file);
  } catch {
    return { file, kept: true, reason: "source unreadable: kept" };
  }
  const quoted = quotedNames(source, ctx.touchfiles.names);
  const listed = Object.keys(ctx.touchfiles.map).filter((k) => ctx.touchfiles.map[k]!.includes(file));
  const mapped = [...new Set([...quoted, ...listed])];
  if (mapped.length === 0) return { file, kept: true, reason: "no known test name in it: kept" };
  const hit = mapped.filter((n) => selected.has(n));
  if (hit.length > 0) {
    return { file, kept: true, reason: `selected: ${hit.slice(0, 3).join(", ")}${hit.length > 3 ? ", …" : ""}` };
  }
  return {
    file,
    kept: false,
    reason:
      `none of its ${mapped.length} mapped test${mapped.length === 1 ? "" : "s"} ` +
      `(${mapped.slice(0, 3).join(", ")}${mapped.length > 3 ? ", …" : ""}) selected`,
  };
}

/** Splits shards into those that run and those skipped by diff (every file skippable); `decisions` per file. */
export function partitionShards(
  shards: readonly PlannedShard[],
  selection: DiffSelection,
  ctx: DecideContext,
): {
  runnable: PlannedShard[];
  skipped: { shard: PlannedShard; reason: string }[];
  decisions: Map<string, FileDecision>;
} {
  const all = new Map<string, FileDecision>();
  if (selection.selected === null) return { runnable: [...shards], skipped: [], decisions: all };
  const runnable: PlannedShard[] = [];
  const skipped: { shard: PlannedShard; reason: string }[] = [];
  for (const shard of shards) {
    const decisions = shard.files.map((f) => decideFile(f, selection.selected, ctx));
    for (const d of decisions) all.set(d.file, d);
    if (decisions.every((d) => !d.kept)) {
      const why = [...new Set(decisions.map((d) => d.reason))].join("; ");
      skipped.push({ shard, reason: `not selected by the diff (${selection.reason}): ${why}` });
    } else {
      runnable.push(shard);
    }
  }
  return { runnable, skipped, decisions: all };
}
