/**
 * Whether the kernel's OOM killer ended a process of a shard: the `oom_kill`
 * counter of a memory cgroup, read when the shard starts and when it exits.
 * A SIGKILL shardguard did not send is otherwise indistinguishable from one a
 * test sent. Reads only; nothing here signals a process.
 *
 * Where the counter comes from, best first:
 *  1. the shard's own cgroup v2 group (`memory.events`, where the memory
 *     controller is enabled there): exact for this shard;
 *  2. the runner's memory cgroup, v2 `memory.events` or v1
 *     `memory.oom_control`: shared by every shard running at that moment.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { ownCgroupDir, readKeyed } from "./cgroups.ts";

/** OOM kills seen while a shard ran: how many, and whether the counter was the shard's alone. */
export interface OomKills {
  count: number;
  /** `shard`: its own cgroup's counter; `runner`: the runner's memory cgroup, shared with concurrent shards. */
  scope: "shard" | "runner";
}

/** A memory cgroup's `oom_kill` counter file and its scope. */
interface Counter {
  file: string;
  scope: OomKills["scope"];
}

/** The runner's memory cgroup counter, looked up once per process (undefined: not yet). */
let runnerCounter: Counter | null | undefined;

/**
 * The runner's own memory cgroup counter: v2 `memory.events` of its cgroup
 * when that has one, else the v1 memory hierarchy's `memory.oom_control`
 * (the `N:memory:PATH` line of /proc/self/cgroup under its mount). Null
 * where neither is readable.
 */
function runnerOomCounter(): Counter | null {
  if (runnerCounter !== undefined) return runnerCounter;
  runnerCounter = null;
  if (process.platform !== "linux") return null;
  const v2 = ownCgroupDir();
  if (v2 !== null && readOomKills(path.join(v2, "memory.events")) !== null) {
    return (runnerCounter = { file: path.join(v2, "memory.events"), scope: "runner" });
  }
  const v1 = v1MemoryDir();
  if (v1 !== null && readOomKills(path.join(v1, "memory.oom_control")) !== null) {
    runnerCounter = { file: path.join(v1, "memory.oom_control"), scope: "runner" };
  }
  return runnerCounter;
}

/** The directory of this process's cgroup v1 memory group, or null (no v1 memory hierarchy). */
function v1MemoryDir(): string | null {
  try {
    const own = readFileSync("/proc/self/cgroup", "utf8")
      .split("\n")
      .map((line) => line.split(":"))
      .find((fields) => fields[1]?.split(",").includes("memory"));
    if (own === undefined) return null;
    for (const entry of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const [left, right] = entry.split(" - ");
      if (!right?.startsWith("cgroup ") || !right.split(" ")[2]?.split(",").includes("memory")) continue;
      const fields = left!.split(" ");
      const root = fields[3]!;
      const mount = fields[4]!;
      const rel = own[2] ?? "/";
      if (root !== "/" && rel !== root && !rel.startsWith(`${root}/`)) continue;
      return path.join(mount, root === "/" ? rel : rel.slice(root.length));
    }
  } catch {
    // No /proc.
  }
  return null;
}

/** The `oom_kill` value of a `memory.events` or `memory.oom_control` file; null when it has none. */
export function readOomKills(file: string): number | null {
  return readKeyed(file).get("oom_kill") ?? null;
}

/**
 * Starts watching for OOM kills of one shard: reads the counter now
 * (`shardCgroup`'s own when it has the memory controller, else the
 * runner's) and returns the function that reads it again at the shard's
 * exit. That function gives null when no counter is readable or nothing
 * was killed.
 */
export function watchOomKills(shardCgroup: string | null): () => OomKills | null {
  const own = shardCgroup === null ? null : path.join(shardCgroup, "memory.events");
  const counter: Counter | null =
    own !== null && readOomKills(own) !== null ? { file: own, scope: "shard" } : runnerOomCounter();
  if (counter === null) return () => null;
  const before = readOomKills(counter.file) ?? 0;
  return () => {
    const count = (readOomKills(counter.file) ?? before) - before;
    return count > 0 ? { count, scope: counter.scope } : null;
  };
}
