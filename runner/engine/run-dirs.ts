/** The output directory's layout (docs/architecture.md, "On-disk layout under OUT"); run ids are unique. */
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
 * Creates the run's directories and points OUT/logs at its logs ({@link pruneRuns} runs later).
 * @throws the file system's error when OUT cannot be written (preflight checks it first)
 */
export async function prepareRunDirs(out: string, runId: string): Promise<RunDirs> {
  const runDir = path.join(out, "runs", runId);
  const logDir = path.join(runDir, "logs");
  const junitDir = path.join(runDir, "junit");
  // Synchronous, like the rest of the way to the first spawn (bench/README.md, "Where the time goes").
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  mkdirSync(junitDir, { recursive: true, mode: 0o700 });
  pointLatest(path.join(out, "logs"), path.relative(out, logDir));
  return { runDir, logDir, junitDir };
}

/** Said of a shard whose log went with a deleted output directory after the shard ended. */
export const LOG_DELETED_AFTER =
  "the shard's log was deleted after it ended (a test removed the output directory?): its output is lost";

/** What the run keeps of its directories while a test may delete them: {@link ensure} before each spawn. */
export class RunDirsKeeper {
  /** The logs directory's identity when the run made it; null when it could not be read. */
  private readonly logDirAtStart: string | null;
  private readonly copiedPreload: string | null;

  /**
   * @param preload the child preload: made again when it is a copy under the run's directory (exec/coverage.ts)
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
   * Makes again what the shards need when it is gone (directories, OUT/logs link, the preload's copy).
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

  /** When the logs directory was replaced: each decided shard whose log is gone gets `logIncomplete` and a note. */
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
 * Removes finished runs beyond {@link KEEP_RUNS} (never `current`, never a recent one). Never rejects; started
 * once the first shards are spawned (bench/README.md, "Where the time goes").
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
