/**
 * Which pending shard may start next, given the resources the running ones hold: all-or-none takes and
 * reservations, so no deadlock and no starvation (docs/configuration.md, "Resource locks and exclusive
 * files"). A shard holds its resources until its process group is gone. Pure: the clock is injected.
 */
import type { ShardNeeds } from "../plan/resources.ts";
import type { PoolGate } from "./pool.ts";

/** How long a shard waited for resources before it started (or has waited so far), and for what. */
export interface ResourceWait {
  /** Ms from the first time a free slot passed it over to its start (or to now). */
  ms: number;
  /** What it waited for, in the order first seen ({@link DRAIN}, {@link EXCLUSIVE_RUNNING}, `resource NAME`). */
  for: string[];
}

/** What an exclusive shard waits for. */
export const DRAIN = "the running shards to finish (exclusive)";
/** What a shard waits for while an exclusive one runs. */
export const EXCLUSIVE_RUNNING = "an exclusive shard to finish";

/** The gate of one run, for `runPool` (exec/pool.ts); items (planned shards) are keyed by identity. */
export class ResourceGate<T> implements PoolGate<T> {
  private readonly held = new Map<string, number>();
  private readonly holders = new Set<T>();
  private exclusiveRunning = 0;
  private readonly waitStart = new Map<T, number>();
  private readonly waitFor = new Map<T, Set<string>>();
  private readonly waits = new Map<T, ResourceWait>();

  /** `capacity`: resource name → shards that may hold it at once (unlisted: 1); `now`: clock in ms. */
  constructor(
    private readonly needsOf: (item: T) => ShardNeeds,
    private readonly capacity: ReadonlyMap<string, number>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The index in `pending` of the item to start now, or -1; records the waits of those passed over. */
  pick(pending: readonly T[]): number {
    const reserved = new Set<string>();
    for (let i = 0; i < pending.length; i++) {
      const item = pending[i]!;
      const needs = this.needsOf(item);
      const blockers = this.blockers(needs, reserved);
      if (blockers.length === 0) return i;
      this.noteWait(item, blockers);
      if (needs.exclusive) return -1;
      for (const lock of needs.locks) reserved.add(lock);
    }
    return -1;
  }

  /** `item` started: it holds its resources from now. */
  start(item: T): void {
    if (this.holders.has(item)) return;
    this.holders.add(item);
    const needs = this.needsOf(item);
    if (needs.exclusive) this.exclusiveRunning++;
    for (const lock of needs.locks) this.held.set(lock, (this.held.get(lock) ?? 0) + 1);
    const since = this.waitStart.get(item);
    if (since !== undefined) {
      this.waits.set(item, { ms: this.now() - since, for: [...this.waitFor.get(item)!] });
      this.waitStart.delete(item);
      this.waitFor.delete(item);
    }
  }

  /** `item`'s process group is gone: its resources are free. Idempotent. */
  end(item: T): void {
    if (!this.holders.delete(item)) return;
    const needs = this.needsOf(item);
    if (needs.exclusive) this.exclusiveRunning--;
    for (const lock of needs.locks) this.held.set(lock, (this.held.get(lock) ?? 1) - 1);
  }

  /** Shards holding resources now. */
  get running(): number {
    return this.holders.size;
  }

  /** The wait of a started item; null when it started without waiting. */
  waited(item: T): ResourceWait | null {
    return this.waits.get(item) ?? null;
  }

  /** The wait so far of an item not started yet; null when no free slot passed it over. */
  waiting(item: T): ResourceWait | null {
    const since = this.waitStart.get(item);
    return since === undefined ? null : { ms: this.now() - since, for: [...this.waitFor.get(item)!] };
  }

  private blockers(needs: ShardNeeds, reserved: ReadonlySet<string>): string[] {
    if (needs.exclusive) return this.holders.size > 0 || reserved.size > 0 ? [DRAIN] : [];
    const out: string[] = [];
    if (this.exclusiveRunning > 0) out.push(EXCLUSIVE_RUNNING);
    for (const lock of needs.locks) {
      if ((this.held.get(lock) ?? 0) >= (this.capacity.get(lock) ?? 1) || reserved.has(lock))
        out.push(`resource ${lock}`);
    }
    return out;
  }

  private noteWait(item: T, blockers: readonly string[]): void {
    if (!this.waitStart.has(item)) {
      this.waitStart.set(item, this.now());
      this.waitFor.set(item, new Set());
    }
    const seen = this.waitFor.get(item)!;
    for (const b of blockers) seen.add(b);
  }
}

/** Shorter waits are left off the START line (they would read "waited 0.0 s"); report.json keeps them. */
export const NOTED_WAIT_MS = 50;

/** "waited 41.2 s for resource skill-docs"; "" for no wait or one under {@link NOTED_WAIT_MS}. */
export function describeWait(wait: ResourceWait | null): string {
  return wait === null || wait.ms < NOTED_WAIT_MS
    ? ""
    : `waited ${(wait.ms / 1000).toFixed(1)} s for ${wait.for.join(", ")}`;
}

/** The makespan (ms) the plan predicts: `jobs` slots with this gate on a simulated clock (`list --timings`). */
export function simulateMakespan<T>(
  items: readonly T[],
  jobs: number,
  durationOf: (item: T) => number,
  needsOf: (item: T) => ShardNeeds,
  capacity: ReadonlyMap<string, number>,
): number {
  let clock = 0;
  const gate = new ResourceGate(needsOf, capacity, () => clock);
  const pending = [...items];
  const running: { item: T; endsAt: number }[] = [];
  while (pending.length > 0 || running.length > 0) {
    while (running.length < Math.max(1, jobs)) {
      const i = gate.pick(pending);
      if (i < 0) break;
      const item = pending.splice(i, 1)[0]!;
      gate.start(item);
      running.push({ item, endsAt: clock + Math.max(0, durationOf(item)) });
    }
    if (running.length === 0) throw new Error("resource gate admitted nothing with nothing running");
    running.sort((a, b) => a.endsAt - b.endsAt);
    const next = running.shift()!;
    clock = next.endsAt;
    gate.end(next.item);
  }
  return clock;
}
