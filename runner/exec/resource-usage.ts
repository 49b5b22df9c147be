/**
 * What one shard's process tree cost (CPU user and system, peak RSS, wall time), by `cgroup` (the child
 * moved into a cgroup v2 group of its own, which descendants cannot leave), `proc-sampling` where no
 * cgroup can be made, or `none` off Linux (docs/architecture.md, "Resource accounting").
 * Kills: `killRest` / `killAllCgroups` empty a shard's cgroup (cgroups.ts `killCgroup`), called only from process.ts.
 */
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { ShardResources } from "../results/report-model.ts";
import {
  cgroupParent,
  cgroupPopulated,
  giveUpCgroups,
  killCgroup,
  readKeyed,
  readText,
  removeCgroups,
  returnGroup,
  takeGroup,
} from "./cgroups.ts";
import {
  childPids,
  liveProcess,
  readProcMemory,
  readProcUsage,
  runtimeNs,
  type Descendant,
  type ProcUsage,
} from "./proc-inspect.ts";

/** First sample after the spawn, and the interval of the next ones, ms. */
export const FIRST_SAMPLE_MS = 100;
export const SAMPLE_MS = 250;

/** Linux reports /proc times in USER_HZ ticks, 100 per second on every architecture Bun runs on. */
const MS_PER_TICK = 10;

/** Most processes one sample reads: a fork bomb must not make sampling unbounded. */
const MAX_SAMPLED = 200;

/** The longest the figures wait for the cgroup to empty after the kill, ms. */
const EMPTY_WAIT_MS = 2_000;

const live = new Set<ShardMeter>();

/** Writes `1` to `cgroup.kill` of every live shard cgroup: the runner's exit hook. */
export function killAllCgroups(): void {
  for (const meter of live) meter.killRest();
}

interface Ticks {
  user: number;
  system: number;
}

/** One process as the sampler last saw it: CPU ticks (self plus reaped children; the children's part) and parent. */
interface Seen extends Ticks {
  start: string;
  ppid: number;
  childUser: number;
  childSystem: number;
}

/** Measures one shard's tree: create before the spawn, {@link attach} the child right after, then {@link finish}. */
export class ShardMeter {
  private method: ShardResources["method"];
  private cgroup: string | null = null;
  private why = "";
  private root: number | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private finished = false;
  private moving: Promise<void> | null = null;
  /** CPU before the move into the cgroup, ms (counted as user time). */
  private preMoveMs = 0;
  private seen = new Map<number, Seen>();
  private lost: Ticks = { user: 0, system: 0 };
  /** Ticks of dead children in `lost` that their parent (by pid) has not yet taken into its cutime/cstime. */
  private owed = new Map<number, Ticks>();
  private cpu = { user: 0, system: 0 };
  private peakRss: number | null = null;
  private memoryPeakFile = false;
  private baseline = new Map<string, number>();

  constructor() {
    if (process.platform !== "linux") {
      this.method = "none";
      this.why = "not measured on this platform (no /proc, no cgroup v2)";
      return;
    }
    this.method = "proc-sampling";
    // Live from here: the per-process cgroup must not be removed under a shard's new group.
    live.add(this);
    const at = cgroupParent();
    if ("dir" in at) {
      try {
        const dir = takeGroup(at.dir);
        this.cgroup = dir;
        this.method = "cgroup";
        this.memoryPeakFile = existsSync(path.join(dir, "memory.peak"));
        // A reused group's counters: the figures are differences from these.
        this.baseline = readKeyed(path.join(dir, "cpu.stat"));
      } catch (error) {
        this.why = `no cgroup (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
      }
    } else this.why = `no cgroup (${at.unusable})`;
  }

  /** Moves the child into its cgroup (a failure falls back to sampling); synchronous, before Bun gets far loading. */
  attach(pid: number): void {
    if (this.method === "none") return;
    this.root = pid;
    if (this.cgroup !== null) {
      // Read first: the CPU run before the move is not in the cgroup's counters.
      const before = runtimeNs(pid);
      const dir = this.cgroup;
      // Off the runner's thread: a move waits for an RCU grace period, which held other shards' handshakes
      // (bench/README.md, "Where the time goes"). The preload joins the group itself if it gets there first.
      this.moving = writeFile(path.join(dir, "cgroup.procs"), String(pid), { flag: "r+" }).then(
        () => {
          this.preMoveMs = (before ?? 0) / 1e6;
        },
        (error: NodeJS.ErrnoException) => this.moveFailed(dir, before, error),
      );
    }
    if (this.method === "cgroup" && this.memoryPeakFile) return;
    this.startSampling();
  }

  private startSampling(): void {
    if (this.timer !== null || this.finished) return;
    const tick = () => {
      this.sample();
      this.timer = setTimeout(tick, SAMPLE_MS);
      this.timer.unref?.();
    };
    this.timer = setTimeout(tick, FIRST_SAMPLE_MS);
    this.timer.unref?.();
  }

  /** A child gone (ESRCH) before the move keeps its spawn-time reading; other errors give up cgroups for the run. */
  private moveFailed(dir: string, before: number | null, error: NodeJS.ErrnoException): void {
    // Discarded (the spawn failed): the group was returned already.
    if (this.finished) return;
    const code = error.code ?? error.message;
    if (code === "ESRCH") {
      this.preMoveMs = (before ?? 0) / 1e6;
      this.why =
        "the child ended before the runner moved it into its cgroup: CPU before the preload joined the group is its " +
        "reading at the spawn";
      return;
    }
    if (this.cgroup !== dir) return;
    returnGroup(dir, true, false);
    this.cgroup = null;
    this.method = "proc-sampling";
    this.why = `no cgroup (moving the child failed: ${code})`;
    giveUpCgroups(`moving a child failed: ${code}`);
    this.startSampling();
  }

  /** The shard's cgroup, for the child preload to join if it starts before the move lands; null without one. */
  get cgroupDir(): string | null {
    return this.cgroup;
  }

  /** A process the sweep is about to kill: its CPU so far is the shard's. */
  noteEscapee(pid: number): void {
    if (this.method !== "proc-sampling") return;
    const usage = readProcUsage(pid);
    if (usage === null || usage.state === "X") return;
    this.seen.set(pid, seenOf(usage));
    this.observeMemory([pid]);
  }

  /** Kills what is still in the shard's cgroup after the sweeps and returns it: what left both group and cookie. */
  killRest(): Descendant[] {
    if (this.cgroup === null) return [];
    const found: Descendant[] = [];
    for (const word of readText(path.join(this.cgroup, "cgroup.procs")).split("\n")) {
      const live = /^\d+$/.test(word) ? liveProcess(Number(word)) : null;
      if (live !== null) found.push(live);
    }
    // No cgroup.kill before Linux 5.14: the group kill and the sweeps have run.
    killCgroup(this.cgroup);
    return found;
  }

  /** Stops sampling and returns the figures (a cgroup's once it is empty, then removed); `sinceSpawnMs`: wall time. */
  async finish(sinceSpawnMs: () => number): Promise<ShardResources> {
    // The move's outcome decides the method.
    if (this.moving !== null) await this.moving;
    this.finished = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    try {
      if (this.method === "none" || this.root === null) return this.figures(sinceSpawnMs(), null, null);
      if (this.cgroup !== null) return await this.finishCgroup(sinceSpawnMs);
      // Everything seen has died by now: its last readings are the shard's.
      this.sample();
      return this.figures(sinceSpawnMs(), this.cpu.user * MS_PER_TICK, this.cpu.system * MS_PER_TICK);
    } finally {
      live.delete(this);
      if (live.size === 0) removeCgroups();
    }
  }

  /** No figures: the spawn failed. Removes the cgroup. */
  discard(): void {
    this.finished = true;
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.cgroup !== null) returnGroup(this.cgroup, !cgroupPopulated(this.cgroup), !this.memoryPeakFile);
    live.delete(this);
    if (live.size === 0) removeCgroups();
  }

  private async finishCgroup(sinceSpawnMs: () => number): Promise<ShardResources> {
    const dir = this.cgroup!;
    const deadline = performance.now() + EMPTY_WAIT_MS;
    let populated = cgroupPopulated(dir);
    while (populated && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 2));
      populated = cgroupPopulated(dir);
    }
    if (populated && !this.memoryPeakFile) this.sample();
    const stat = readKeyed(path.join(dir, "cpu.stat"));
    if (this.memoryPeakFile) {
      const peak = Number(readText(path.join(dir, "memory.peak")));
      if (Number.isFinite(peak)) this.peakRss = peak;
    }
    if (populated) this.why = "processes were still in the cgroup 2 s after the kill";
    returnGroup(dir, !populated, !this.memoryPeakFile);
    const usec = (key: string) => {
      const value = stat.get(key);
      return value === undefined ? null : (value - (this.baseline.get(key) ?? 0)) / 1000;
    };
    const user = usec("user_usec");
    return this.figures(sinceSpawnMs(), user === null ? null : user + this.preMoveMs, usec("system_usec"));
  }

  private figures(wallMs: number, cpuUserMs: number | null, cpuSystemMs: number | null): ShardResources {
    const round = (ms: number | null) => (ms === null ? null : Math.round(ms * 1000) / 1000);
    return {
      wallMs: Math.round(wallMs * 1000) / 1000,
      cpuUserMs: round(cpuUserMs),
      cpuSystemMs: round(cpuSystemMs),
      peakRssBytes: this.peakRss,
      method: this.method,
      precision: this.precision(),
    };
  }

  private precision(): string {
    const rss =
      this.peakRss === null
        ? "peak RSS unknown (the tree ended before the first sample)"
        : `peak RSS sampled ${sampling}`;
    const why = this.why ? `; ${this.why}` : "";
    if (this.method === "none") return this.why;
    if (this.method === "cgroup") {
      return this.memoryPeakFile
        ? `exact (cgroup v2 cpu.stat and memory.peak, which counts page cache as well as RSS)${why}`
        : `CPU exact (cgroup v2 cpu.stat); ${rss}${why}`;
    }
    const peak =
      this.peakRss === null
        ? "peak RSS unknown (the tree ended before the first sample)"
        : "peak RSS from the same samples";
    return (
      `sampled from /proc ${sampling}, in 10 ms clock ticks: CPU a process ran in its last interval, or in a ` +
      `life shorter than one, is missed unless a parent in the tree reaped it; ${peak}${why}`
    );
  }

  private sample(): void {
    this.observeMemory(this.members());
  }

  /** The cgroup's processes, or (sampling) the tree below the child plus still-alive orphans seen before. */
  private members(): number[] {
    if (this.cgroup !== null) {
      return readText(path.join(this.cgroup, "cgroup.procs"))
        .split("\n")
        .filter((l) => /^\d+$/.test(l))
        .slice(0, MAX_SAMPLED)
        .map(Number);
    }
    const found = new Map<number, Seen>();
    const queue = [this.root!, ...this.seen.keys()];
    while (queue.length > 0 && found.size < MAX_SAMPLED) {
      const pid = queue.shift()!;
      if (found.has(pid)) continue;
      const usage = readProcUsage(pid);
      if (usage === null || usage.state === "X") continue;
      // A recycled pid is another process: the one seen died unseen.
      const before = this.seen.get(pid);
      if (before !== undefined && before.start !== usage.start) continue;
      found.set(pid, seenOf(usage));
      queue.push(...childPids(pid));
    }
    this.countCpu(found);
    return [...found.keys()];
  }

  /**
   * Proc sampling: each live process's own and reaped children's time, plus `lost` for the dead unless a
   * parent in the tree now carries them; what a parent has not yet reaped it owes, paid from later growth.
   */
  private countCpu(now: Map<number, Seen>): void {
    const growth = new Map<number, Ticks>();
    for (const [pid, cur] of now) {
      const prev = this.seen.get(pid);
      const grown = {
        user: cur.childUser - (prev?.childUser ?? cur.childUser),
        system: cur.childSystem - (prev?.childSystem ?? cur.childSystem),
      };
      const owed = this.owed.get(pid);
      if (owed !== undefined) this.settle(owed, grown);
      growth.set(pid, grown);
    }
    for (const [pid, last] of this.seen) {
      if (now.has(pid)) continue;
      // Died since the last sample, its own debts with it (they stay lost).
      this.owed.delete(pid);
      const parentGrowth = growth.get(last.ppid);
      const unpaid = { user: last.user, system: last.system };
      if (parentGrowth !== undefined) {
        const taken = {
          user: Math.min(unpaid.user, parentGrowth.user),
          system: Math.min(unpaid.system, parentGrowth.system),
        };
        unpaid.user -= taken.user;
        unpaid.system -= taken.system;
        parentGrowth.user -= taken.user;
        parentGrowth.system -= taken.system;
      }
      this.lost.user += unpaid.user;
      this.lost.system += unpaid.system;
      if (parentGrowth !== undefined && unpaid.user + unpaid.system > 0) {
        const owed = this.owed.get(last.ppid) ?? { user: 0, system: 0 };
        owed.user += unpaid.user;
        owed.system += unpaid.system;
        this.owed.set(last.ppid, owed);
      }
    }
    this.seen = now;
    let user = this.lost.user;
    let system = this.lost.system;
    for (const s of now.values()) {
      user += s.user;
      system += s.system;
    }
    // Never down: a reading can only lag the kernel's counters.
    this.cpu.user = Math.max(this.cpu.user, user);
    this.cpu.system = Math.max(this.cpu.system, system);
  }

  /** A parent's children time grew by `grown`: what it owed is paid from it (and leaves `lost`). */
  private settle(owed: Ticks, grown: Ticks): void {
    for (const k of ["user", "system"] as const) {
      const paid = Math.max(0, Math.min(owed[k], grown[k]));
      owed[k] -= paid;
      grown[k] -= paid;
      this.lost[k] -= paid;
    }
  }

  private observeMemory(pids: readonly number[]): void {
    let sum = 0;
    let any = false;
    for (const pid of pids) {
      const mem = readProcMemory(pid);
      if (mem === null) continue;
      any = true;
      sum += mem.rssBytes;
      // A process's own high-water mark: the tree's peak is at least that, between samples too.
      if (mem.hwmBytes > (this.peakRss ?? 0)) this.peakRss = mem.hwmBytes;
    }
    if (any && sum > (this.peakRss ?? 0)) this.peakRss = sum;
  }
}

const sampling = `first after ${FIRST_SAMPLE_MS} ms, then every ${SAMPLE_MS} ms`;

/** A meter for the next shard process (see {@link ShardMeter}). */
export function startMeter(): ShardMeter {
  return new ShardMeter();
}

function seenOf(usage: ProcUsage): Seen {
  return {
    start: usage.start,
    ppid: usage.ppid,
    user: usage.utime + usage.cutime,
    system: usage.stime + usage.cstime,
    childUser: usage.cutime,
    childSystem: usage.cstime,
  };
}
