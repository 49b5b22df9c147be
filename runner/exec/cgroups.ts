/** cgroup v2 for resource accounting: finding, making, reading, removing groups; only {@link killCgroup} signals. */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Descendant } from "../child/proc-reader.ts";
import { isAlive, liveProcess } from "./proc-inspect.ts";

/** For tests: the cgroup v2 directory to make shard cgroups under; an unwritable one means /proc sampling. */
export const TEST_CGROUP_ENV = "SHARDGUARD_TEST_CGROUP";

/** The runner's per-process cgroup, or why there is none; undefined: not made (yet, or again). */
let parent: { dir: string } | { unusable: string } | undefined;
let staleRemoved = false;
/** Empty groups of finished shards, reused (their counters are read as differences). */
const idle: string[] = [];
let groupSeq = 0;

/** The runner's own cgroup v2 directory (/proc/self/cgroup under the cgroup2 mount); null without cgroup v2. */
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
      // A mount of a sub-tree holds only the cgroups below it.
      if (root !== "/" && own !== root && !own.startsWith(`${root}/`)) continue;
      return path.join(mount, root === "/" ? own : own.slice(root.length));
    }
  } catch {
    // No /proc.
  }
  return null;
}

/** The runner's per-process cgroup (`<own cgroup>/shardguard-<pid>`, made on first use), or why there is none. */
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
      unusable:
        `cannot create a cgroup under ${own}: ` +
        `${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    });
  }
  if (!staleRemoved) {
    removeStaleParents(own);
    // Also on a natural exit, where signal-exit's hook does not run under Bun 1.4.4.
    process.once("exit", removeCgroups);
  }
  staleRemoved = true;
  return (parent = { dir });
}

/** Dead runners' shard cgroups with live members, beside this one's: left when runner and guardian were SIGKILLed. */
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

/** Removes empty cgroups left by runners that died before removing theirs. */
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

/** Writes `1` to `dir`'s `cgroup.kill` (forks included); false when that failed (no group, Linux before 5.14). */
export function killCgroup(dir: string): boolean {
  try {
    writeFileSync(path.join(dir, "cgroup.kill"), "1", { flag: "r+" });
    return true;
  } catch {
    return false;
  }
}

/** Removes a cgroup and its child cgroups, deepest first; false when one still has processes. */
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

/** An empty group for one shard under `parentDir`, idle or new; throws the mkdir error. */
export function takeGroup(parentDir: string): string {
  const reused = idle.pop();
  if (reused !== undefined) return reused;
  const dir = path.join(parentDir, `shard-${++groupSeq}`);
  mkdirSync(dir);
  return dir;
}

/** Keeps a shard's group for the next when empty and `reuse` (no `memory.peak`, not a difference), else removes it. */
export function returnGroup(dir: string, empty: boolean, reuse: boolean): void {
  if (empty && reuse) idle.push(dir);
  else if (!removeCgroupTree(dir)) leftBusy.add(dir);
}

/** Marks cgroups unusable for the process (one failed move means every later one would) and removes the runner's. */
export function giveUpCgroups(reason: string): void {
  removeCgroups();
  parent = { unusable: reason };
}

const leftBusy = new Set<string>();

/** Removes the runner's cgroups when no shard runs and at exit; the next shard makes them again. */
export function removeCgroups(): void {
  for (const dir of leftBusy) if (removeCgroupTree(dir)) leftBusy.delete(dir);
  idle.length = 0;
  if (parent !== undefined && "dir" in parent && removeCgroupTree(parent.dir)) parent = undefined;
}

/** `cgroup.events` says the group or one below it has a process. */
export function cgroupPopulated(dir: string): boolean {
  return readKeyed(path.join(dir, "cgroup.events")).get("populated") === 1;
}

/** A cgroup file's text, trimmed; "" when it cannot be read. */
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
