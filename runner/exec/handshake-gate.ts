/**
 * Where the runner's own CPU work yields to children waiting for their handshake: a child holds its tests
 * until the runner answers, and the runner is one thread. A finished shard's verdict and the first report wait
 * here, each at most its bound (docs/architecture.md, "One shard end to end").
 */

/** The longest a finished shard's evidence and verdict wait for other shards' pending handshakes, ms. */
export const VERDICT_WAIT_MS = 50;

/** The longest the first report waits for the first wave's handshakes, ms (a runner dying before it leaves none). */
export const FIRST_REPORT_WAIT_MS = 100;

/** The run's pending handshakes. */
export class HandshakeGate {
  private pending = 0;
  private waiters = new Set<() => void>();

  /** A shard's attempt with events started; returns the call ending the wait for it (later calls do nothing). */
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

  /** Resolves once no handshake is pending, or after `maxWaitMs` ms. Never rejects. */
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
