/**
 * On-disk layout of the output directory, safe for concurrent runs:
 *
 *   OUT/runs/<runId>/logs/shard-<n>-<slug>.log   every byte a shard printed
 *   OUT/runs/<runId>/logs/shard-<n>-<slug>.events.jsonl
 *   OUT/runs/<runId>/junit/shard-<n>.xml         Bun's own JUnit per shard
 *   OUT/runs/<runId>/junit.xml, report.json      this run's own copy
 *   OUT/logs -> runs/<runId>/logs                the newest run's logs
 *   OUT/junit.xml, OUT/report.json               written by whichever run finishes
 *
 * Run ids are unique, so two runs never write the same log.
 */
import { lstatSync, mkdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import path from "node:path";

/** Paths of one run inside the output directory. */
export interface RunDirs {
  runDir: string;
  logDir: string;
  junitDir: string;
}

/** How many finished runs are kept under OUT/runs. */
export const KEEP_RUNS = 10;

/** A run directory touched this recently may belong to a live run and is never pruned, ms. */
const PRUNE_MIN_AGE_MS = 6 * 60 * 60 * 1000;

/**
 * Creates the run's directories and points OUT/logs at its logs. Pruning
 * old runs is {@link pruneRuns}, done while the shards run.
 *
 * @throws the file system's error when OUT cannot be written (preflight checks it first)
 */
export async function prepareRunDirs(out: string, runId: string): Promise<RunDirs> {
  const runDir = path.join(out, "runs", runId);
  const logDir = path.join(runDir, "logs");
  const junitDir = path.join(runDir, "junit");
  // Synchronous, like the rest of the way to the first spawn: six thread-pool
  // round trips in a row cost more than the calls (bench/README.md).
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  mkdirSync(junitDir, { recursive: true, mode: 0o700 });
  pointLatest(path.join(out, "logs"), path.relative(out, logDir));
  return { runDir, logDir, junitDir };
}

/**
 * Removes finished runs under OUT/runs beyond {@link KEEP_RUNS} (never
 * `current`, never one touched in the last 6 hours). Never rejects: pruning
 * is housekeeping, and a run must not fail for it. It costs a `stat` per
 * excess run and the removal of whole run directories, so the run starts it
 * once its first shards are spawned rather than before (bench/README.md).
 */
export async function pruneRuns(out: string, current: string): Promise<void> {
  try {
    await prune(path.join(out, "runs"), current);
  } catch {
    // OUT/runs unreadable: the next run tries again.
  }
}

/** Replaces the OUT/logs symlink atomically (temp link + rename); leaves a real directory alone. */
function pointLatest(link: string, target: string): void {
  try {
    const existing = lstatSync(link);
    if (!existing.isSymbolicLink()) return;
  } catch {
    // Absent: fine.
  }
  const temp = `${link}.${process.pid}.tmp`;
  rmSync(temp, { force: true });
  symlinkSync(target, temp);
  renameSync(temp, link);
}

async function prune(runsDir: string, current: string): Promise<void> {
  const names = (await readdir(runsDir)).filter((n) => n !== current).sort();
  const excess = names.slice(0, Math.max(0, names.length - (KEEP_RUNS - 1)));
  for (const name of excess) {
    const dir = path.join(runsDir, name);
    try {
      if (Date.now() - (await stat(dir)).mtimeMs < PRUNE_MIN_AGE_MS) continue;
      await rm(dir, { recursive: true, force: true });
    } catch {
      // Another run pruned it first.
    }
  }
}
