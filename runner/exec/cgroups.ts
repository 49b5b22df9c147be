/**
 * The cgroup v2 side of the resource accounting (exec/resource-usage.ts):
 * where the runner's own cgroup is, the per-process group it makes shard
 * groups under, their removal, and reading their files. Reads and makes
 * directories only; nothing here signals a process except {@link killCgroup}
 * (the kernel's `cgroup.kill`), which resource-usage.ts and process.ts call.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Descendant } from "../child/proc-reader.ts";
import { isAlive, liveProcess } from "./proc-inspect.ts";

/**
 * Environment variable, for tests: the cgroup v2 directory to make shard
 * cgroups under instead of the runner's own; one that cannot be written
 * makes every shard fall back to /proc sampling.
 */
export const TEST_CGROUP_ENV = "SHARDGUARD_TEST_CGROUP";

/** The runner's per-process cgroup under which shard cgroups are made, or why there is none; undefined: not made (yet, or again). */
let parent: { dir: string } | { unusable: string } | undefined;
/** True once the groups of dead runners were looked for (once per process). */
let staleRemoved = false;
/** Empty shard groups of finished shards, reused (their counters are read as differences). */
const idle: string[] = [];
let groupSeq = 0;

/**
 * The runner's own cgroup v2 directory: the `0::PATH` line of
 * /proc/self/cgroup under the cgroup2 mount of /proc/self/mountinfo (at
 * /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid
 * one). Null without cgroup v2.
 */
export function ownCgroupDir(): string | null {
  try {
    const line = readFileSync("/proc/self/cgroup", "utf8")
      .split("\n")
      .find((l) => l.startsWith("0::"));
    if (line === undefined) return null;
    const own = line.slice(3);
    for (const entry of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const [left, right] = entry.split(" - ");
      if (!right?.startsWith("cgroup2 ")) continue;
      const fields = left!.split(" ");
      const root = fields[3]!;
      const mount = fields[4]!.replace(/\\040/g, " ");
      // A mount of a sub-tree (root other than "/") holds only the cgroups below it.
      if (root !== "/" && own !== root && !own.startsWith(`${root}/`)) continue;
      return path.join(mount, root === "/" ? own : own.slice(root.length));
    }
  } catch {
    // No /proc.
  }
  return null;
}

/**
 * The runner's per-process cgroup (`<own cgroup>/shardguard-<pid>`, made on
 * first use and again after {@link removeCgroups}), or why there is none.
 */
export function cgroupParent(): { dir: string } | { unusable: string } {
  if (parent !== undefined) return parent;
  if (process.platform !== "linux") return (parent = { unusable: "not Linux" });
  const own = process.env[TEST_CGROUP_ENV] || ownCgroupDir();
  if (own === null) return (parent = { unusable: "no cgroup v2 hierarchy" });
  const dir = path.join(own, `shardguard-${process.pid}`);
  if (!existsSync(path.join(own, "cgroup.procs")))
    return (parent = { unusable: `${own} is not a cgroup v2 directory` });
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return (parent = { dir });
    return (parent = {
      unusable: `cannot create a cgroup under ${own}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    });
  }
  if (!staleRemoved) {
    removeStaleParents(own);
    // Also on a natural exit, where signal-exit's hook (process.ts) does not run under Bun 1.4.4.
    process.once("exit", removeCgroups);
  }
  staleRemoved = true;
  return (parent = { dir });
}

/**
 * The shard cgroups, with their live members, beside this runner's own
 * per-process cgroup, of runners that died (`shardguard-<pid>`, that pid gone) and that still hold
 * processes: left when a runner and its guardian were both SIGKILLed. Their
 * members are the stale-run sweep's (process.ts `sweepStaleRuns`), which
 * finds those without a cookie here.
 */
export function staleShardCgroups(): { dir: string; members: Descendant[] }[] {
  if (process.platform !== "linux") return [];
  const own = process.env[TEST_CGROUP_ENV] || ownCgroupDir();
  if (own === null) return [];
  const found: { dir: string; members: Descendant[] }[] = [];
  try {
    for (const name of readdirSync(own)) {
      const m = /^shardguard-(\d+)$/.exec(name);
      if (!m || Number(m[1]) === process.pid || isAlive(Number(m[1]))) continue;
      for (const shard of readdirSync(path.join(own, name))) {
        const dir = path.join(own, name, shard);
        if (!/^shard-\d+$/.test(shard) || !cgroupPopulated(dir)) continue;
        const members = readText(path.join(dir, "cgroup.procs"))
          .split("\n")
          .map((word) => (/^\d+$/.test(word) ? liveProcess(Number(word)) : null))
          .filter((m): m is Descendant => m !== null);
        found.push({ dir, members });
      }
    }
  } catch {
    // Not readable: nothing to find.
  }
  return found;
}

/** Empty cgroups left by runners that died before removing theirs (their processes are the stale-run sweep's). */
function removeStaleParents(own: string): void {
  let names: string[];
  try {
    names = readdirSync(own);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^shardguard-(\d+)$/.exec(name);
    if (m && Number(m[1]) !== process.pid && !isAlive(Number(m[1]))) removeCgroupTree(path.join(own, name));
  }
}

/** Writes `1` to `dir`'s `cgroup.kill` (SIGKILL to everything in it, forks included); false when that failed (no such group, Linux before 5.14). */
export function killCgroup(dir: string): boolean {
  try {
    writeFileSync(path.join(dir, "cgroup.kill"), "1", { flag: "r+" });
    return true;
  } catch {
    return false;
  }
}

/** Removes a cgroup and its child cgroups, deepest first; false when one is still busy (has processes). */
export function removeCgroupTree(dir: string): boolean {
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory()) removeCgroupTree(path.join(dir, entry.name));
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/**
 * An empty group for one shard under `parentDir`: an idle one, or a new one
 * (`shard-<n>`).
 *
 * @throws the mkdir error when a new one cannot be made
 */
export function takeGroup(parentDir: string): string {
  const reused = idle.pop();
  if (reused !== undefined) return reused;
  const dir = path.join(parentDir, `shard-${++groupSeq}`);
  mkdirSync(dir);
  return dir;
}

/**
 * A shard's group after its figures were read: kept for the next shard when
 * empty and `reuse` (no `memory.peak` in it, which cannot be read as a
 * difference), else removed (a busy one is tried again at exit).
 */
export function returnGroup(dir: string, empty: boolean, reuse: boolean): void {
  if (empty && reuse) idle.push(dir);
  else if (!removeCgroupTree(dir)) leftBusy.add(dir);
}

/** Marks cgroups unusable for the rest of the process (moving a child failed: every later one would) and removes the runner's. */
export function giveUpCgroups(reason: string): void {
  removeCgroups();
  parent = { unusable: reason };
}

/** Shard cgroups that still had processes when their figures were read. */
const leftBusy = new Set<string>();

/**
 * Removes the runner's cgroups: when no shard is running (a process that
 * ends without an exit event, as under `bun test`, leaves none behind) and
 * at exit. The next shard makes them again.
 */
export function removeCgroups(): void {
  for (const dir of leftBusy) if (removeCgroupTree(dir)) leftBusy.delete(dir);
  idle.length = 0;
  if (parent !== undefined && "dir" in parent && removeCgroupTree(parent.dir)) parent = undefined;
}

/** True when the cgroup's `cgroup.events` says it or a group below it has a process. */
export function cgroupPopulated(dir: string): boolean {
  return readKeyed(path.join(dir, "cgroup.events")).get("populated") === 1;
}

/** A cgroup file's text, trimmed; "" when it cannot be read (the group is gone, no such controller). */
export function readText(file: string): string {
  try {
    return readFileSync(file, "latin1").trim();
  } catch {
    return "";
  }
}

/** `key value` lines (cpu.stat, cgroup.events) as numbers. */
export function readKeyed(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of readText(file).split("\n")) {
    const [key, value] = line.split(" ");
    if (key && value !== undefined && Number.isFinite(Number(value))) out.set(key, Number(value));
  }
  return out;
}
