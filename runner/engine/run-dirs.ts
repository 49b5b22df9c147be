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
import { existsSync, lstatSync, mkdirSync, renameSync, rmSync, statSync, symlinkSync } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { coverageSafePreload } from "../exec/coverage.ts";
import type { ShardResult } from "../results/report-model.ts";

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

/** Said of a shard whose log went with a deleted output directory after the shard ended. */
export const LOG_DELETED_AFTER =
  "the shard's log was deleted after it ended (a test removed the output directory?): its output is lost";

/**
 * What the run keeps of its directories under OUT while a test may delete
 * or replace them (`rm -rf .shardguard`): {@link ensure}, checked before
 * each spawn (ShardContext.ensureDirs), and {@link noteLostLogs} at the end.
 */
export class RunDirsKeeper {
  /** The logs directory's identity when the run made it; null when it could not be read. */
  private readonly logDirAtStart: string | null;
  private readonly copiedPreload: string | null;

  /**
   * @param preload the child preload the shards load: made again when it is
   *   a copy under the run's directory (exec/coverage.ts)
   * @param console told in a line each time something had to be made again
   */
  constructor(
    private readonly out: string,
    private readonly dirs: RunDirs,
    preload: string | undefined,
    private readonly console: { line(text: string): void },
  ) {
    this.logDirAtStart = identity(dirs.logDir);
    this.copiedPreload = preload?.startsWith(dirs.runDir + path.sep) ? preload : null;
  }

  /**
   * Makes again what the shards need when it is gone: the log and JUnit
   * directories (mode 0700), the OUT/logs link, the preload's copy.
   *
   * @throws the file system's error when they cannot be made (a file in their place)
   */
  readonly ensure = (): void => {
    // mkdirSync names the first directory it made; undefined when all were there.
    const made = [this.dirs.logDir, this.dirs.junitDir]
      .map((dir) => mkdirSync(dir, { recursive: true, mode: 0o700 }))
      .some((m) => m !== undefined);
    const preloadGone = this.copiedPreload !== null && !existsSync(this.copiedPreload);
    if (preloadGone) coverageSafePreload(this.dirs.runDir);
    if (!made && !preloadGone) return;
    const link = path.join(this.out, "logs");
    if (!existsSync(link)) pointLatest(link, path.relative(this.out, this.dirs.logDir));
    const why = "was deleted during the run (a test removed it?): made again for the shards to come";
    this.console.line(`shardguard: WARNING ${this.dirs.runDir} ${why}`);
  };

  /**
   * When the logs directory is no longer the one the run made: each decided
   * shard whose log is gone (it ended before the deletion, and nothing holds
   * the file any more) gets `logIncomplete` and a note, so its `logPath`
   * does not name a missing file silently. One stat when nothing was deleted.
   */
  noteLostLogs(results: Map<number, ShardResult>): void {
    if (this.logDirAtStart !== null && identity(this.dirs.logDir) === this.logDirAtStart) return;
    for (const [index, r] of results) {
      const noted = r.notes?.some((n) => n.startsWith("the shard's log was deleted")) ?? false;
      if (r.logPath === null || noted || existsSync(r.logPath)) continue;
      results.set(index, { ...r, logIncomplete: true, notes: [...(r.notes ?? []), LOG_DELETED_AFTER] });
    }
  }
}

/** `dev:ino` of a path, or null when it cannot be read. */
function identity(file: string): string | null {
  try {
    const s = statSync(file);
    return `${s.dev}:${s.ino}`;
  } catch {
    return null;
  }
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
