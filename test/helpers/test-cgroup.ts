/**
 * A cgroup v2 directory the tests' runs may make their shard groups under
 * (SHARDGUARD_TEST_CGROUP), below this process's own cgroup, as the runner
 * would; null where none can be made (no cgroup v2, no write access).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { ownCgroupDir } from "../../runner/exec/cgroups.ts";

export function makeTestCgroup(prefix: string): string | null {
  if (process.platform !== "linux") return null;
  const own = ownCgroupDir();
  if (own === null) return null;
  const dir = path.join(own, `${prefix}-${process.pid}`);
  try {
    mkdirSync(dir);
    return dir;
  } catch {
    return null;
  }
}
