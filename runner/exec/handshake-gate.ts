/**
 * Shards whose child has yet to complete its event channel's handshake, so
 * that the runner answers handshakes before it reads a finished shard's
 * JUnit and decides its verdict.
 *
 * Why: a child holds its tests (in the shard preload) until the runner
 * answers its handshake, and the runner is one thread. A verdict decided
 * while the next shard's child dials in (10-25 ms for a 50-file shard, more
 * for large ones) held that child idle as long (P3, bench/README.md); the
 * verdict itself waits for nothing but the runner's time.
 */
export class HandshakeGate {
  private pending = 0;
  private waiters = new Set<() => void>();

  /**
   * A shard's channel is listening: its child will dial it.
   * @returns the call that ends the wait for it (handshake done, failed, or the child gone); later calls do nothing
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
   * one still is (a child slow to dial in costs a verdict at most that
   * much). Never rejects.
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
