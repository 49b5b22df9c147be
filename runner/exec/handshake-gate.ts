/**
 * The one way the runner's own CPU work yields to shard children waiting
 * for their event channel's handshake: a child holds its tests (in the
 * shard preload) until the runner answers it, and the runner is one
 * thread, so work done while a child dials in holds that child idle as
 * long. Two pieces of work wait here, each at most its bound: a finished
 * shard's evidence and verdict (10-25 ms for a 50-file shard, more for
 * large ones; exec/shard-attempt.ts) and the run's first report (25-30 ms
 * of rendering for 300 files; engine/run.ts).
 *
 * Why it stays (Bun 1.4.4, 2 cores, under load; docs/architecture.md, "One
 * shard end to end"): on P3's 50-file shards the median spawn-to-handshake
 * time was 33-37 ms with the waits and 55-79 ms without; on P1's one-test
 * shards, whose verdicts are cheap, the same either way.
 */

/**
 * The longest a finished shard's evidence and verdict wait for other
 * shards' pending handshakes, ms: 50. A child dials in 5-15 ms after its
 * spawn on an idle machine; one slower than this costs that verdict no more.
 */
export const VERDICT_WAIT_MS = 50;

/**
 * The longest the run's first report waits for the first wave's
 * handshakes, ms: 100. Until that report lands a runner that dies leaves
 * no report of the run, and a child that never dials in is given 5 s
 * (exec/shard-attempt.ts, CONNECT_TIMEOUT_MS).
 */
export const FIRST_REPORT_WAIT_MS = 100;

/** The run's pending handshakes. */
export class HandshakeGate {
  private pending = 0;
  private waiters = new Set<() => void>();

  /**
   * A shard's attempt with events started: its child will dial in.
   * @returns the call that ends the wait for it (handshake done, failed, or the attempt over); later calls do nothing
   */
  enter(): () => void {
    this.pending += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.pending -= 1;
      if (this.pending === 0) for (const wake of [...this.waiters]) wake();
    };
  }

  /**
   * Resolves once no handshake is pending, or after `maxWaitMs` (ms) when
   * one still is (a child slow to dial in costs the waiting work at most
   * that much). Never rejects.
   */
  settled(maxWaitMs: number): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, maxWaitMs);
      this.waiters.add(wake);
    });
  }
}
