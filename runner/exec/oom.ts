/**
 * Whether the kernel's OOM killer ended a process of a shard, from a memory cgroup's `oom_kill` counter read
 * at start and exit: the shard's own cgroup v2 group (exact) or else the runner's (shared with running shards).
 * Otherwise a SIGKILL we did not send looks like one a test sent. Reads only.
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

/** The runner's memory cgroup counter: v2 `memory.events` of its cgroup, else v1 `memory.oom_control`; or null. */
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

/** Reads the shard's (else the runner's) counter now; the call returned reads it at exit (null: unreadable or none). */
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
