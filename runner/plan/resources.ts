/** Resource locks and exclusive files as the plan sees them; the scheduling rule is exec/resource-gate.ts. */
import type FastGlob from "fast-glob";
import type { RunSettings } from "../config/settings-schema.ts";
import { ALWAYS_IGNORED } from "./plan.ts";

/** `exclusive` and `resources` globs read like patterns: a plain path also means every file under it. */
function withDirectories(globs: readonly string[]): string[] {
  return globs.flatMap((g) => (/[*?[\]{}()!]/.test(g) ? [g] : [g, `${g.replace(/\/+$/, "")}/**`]));
}

/** The glob matcher (micromatch), loaded only by a run that sets resources or exclusive globs. */
const globMatcher = (globs: readonly string[]) =>
  (require("../util/glob-match.ts") as typeof import("../util/glob-match.ts")).globMatcher(withDirectories(globs));

/** What one shard holds while it runs. */
export interface ShardNeeds {
  /** Resource names, sorted; empty for none. */
  locks: string[];
  /** Runs with no other shard running. */
  exclusive: boolean;
}

/** The resource settings of a run, as matchers over root-relative files. */
export interface ResourcePlan {
  /** Whether the run has any `exclusive` glob or resource at all (reports show the fields only then). */
  active: boolean;
  /** Resource name → how many shards may hold it at once. */
  capacity: ReadonlyMap<string, number>;
  /** Whether a file is exclusive (it is then never batched with another). */
  isExclusive(file: string): boolean;
  /** A shard's needs: the union of its files' resources; exclusive when any of its files is. */
  needsOf(files: readonly string[]): ShardNeeds;
}

/** Builds the {@link ResourcePlan} of a run's `exclusive` and `resources` settings. */
export function resourcePlan(settings: Pick<RunSettings, "exclusive" | "resources">): ResourcePlan {
  const exclusive = settings.exclusive.length > 0 ? globMatcher(settings.exclusive) : () => false;
  const resources = Object.entries(settings.resources).map(([name, spec]) => ({
    name,
    matches: globMatcher(spec.files),
  }));
  const capacity = new Map(Object.entries(settings.resources).map(([name, spec]) => [name, spec.capacity]));
  const cache = new Map<string, string[]>();
  const locksOfFile = (file: string) => {
    let locks = cache.get(file);
    if (!locks) cache.set(file, (locks = resources.filter((r) => r.matches(file)).map((r) => r.name)));
    return locks;
  };
  return {
    active: settings.exclusive.length > 0 || resources.length > 0,
    capacity,
    isExclusive: exclusive,
    needsOf: (files) => ({
      locks: [...new Set(files.flatMap(locksOfFile))].sort(),
      exclusive: files.some(exclusive),
    }),
  };
}

/** Dispatch order with exclusive shards last, each group in order: a drain mid-run would idle the other slots,
 * at the end the pool drains anyway (as Bazel runs its exclusive tests last). */
export function exclusiveLast<T extends { files: readonly string[] }>(shards: readonly T[], plan: ResourcePlan): T[] {
  if (!plan.active) return [...shards];
  const alone = shards.filter((s) => s.files.some(plan.isExclusive));
  return alone.length === 0 ? [...shards] : [...shards.filter((s) => !alone.includes(s)), ...alone];
}

/** One note per `exclusive` or resource glob matching no planned file and no test file under the root (a typo?). */
export function unmatchedGlobNotes(
  root: string,
  settings: Pick<RunSettings, "exclusive" | "resources">,
  planned: readonly string[],
): string[] {
  const entries: [string, string][] = [
    ...settings.exclusive.map((g): [string, string] => ["exclusive", g]),
    ...Object.entries(settings.resources).flatMap(([name, spec]) =>
      spec.files.map((g): [string, string] => [`resource ${name}`, g]),
    ),
  ];
  const notes: string[] = [];
  if (entries.length === 0) return notes;
  for (const [owner, glob] of entries) {
    const matches = globMatcher([glob]);
    if (planned.some(matches)) continue;
    const fg = require("fast-glob") as typeof FastGlob;
    let found = false;
    try {
      found =
        fg.sync(withDirectories([glob]), {
          cwd: root,
          ignore: ALWAYS_IGNORED,
          onlyFiles: true,
          dot: false,
          suppressErrors: true,
        }).length > 0;
    } catch {
      found = false;
    }
    if (!found) notes.push(`note: ${owner} glob ${JSON.stringify(glob)} matches no file under ${root}`);
  }
  return notes;
}

/** What `list` shows after a shard: `  (exclusive; locks a, b)`, or "" for a shard that holds nothing. */
export function needsTag(needs: ShardNeeds): string {
  const held = [
    ...(needs.exclusive ? ["exclusive"] : []),
    ...(needs.locks.length > 0 ? [`locks ${needs.locks.join(", ")}`] : []),
  ];
  return held.length > 0 ? `  (${held.join("; ")})` : "";
}
