/**
 * When a run writes its first report: once the first wave of shards (the
 * first `--jobs` of them) runs its tests, each spawned and, with events,
 * past its inspector handshake; or FIRST_WRITE_WAIT_MS after the whole
 * first wave was spawned, when a handshake is slow to come; whichever is
 * first. A shard that ends without either counts as both.
 *
 * Why wait at all: building and rendering that report is CPU work (25-30 ms
 * for 300 files) that held back the first spawns, then the handshakes,
 * while its files landed after them anyway. Why a bound: a child that never
 * dials in is given 5 s (exec/shard.ts, CONNECT_TIMEOUT_MS), and until the
 * first report lands a runner that dies leaves no report of the run
 * (bench/README.md).
 */

/** The longest the first write waits for the first wave's handshakes once the wave is spawned, ms: 100 (handshakes take 5-15 ms). */
export const FIRST_WRITE_WAIT_MS = 100;

/** One shard's part in the first wave; each call counts once, later ones do nothing. */
export interface WaveMember {
  /** Its child was spawned. */
  spawned(): void;
  /** Its child runs its tests, or the shard ended without that (counts as spawned too). */
  running(): void;
}

/** The first wave of a run; `onReady` is called once, when the first report should be written. */
export class FirstWave {
  private unspawned: number;
  private notRunning: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private fired = false;

  /**
   * @param size shards in the first wave (0: ready at once)
   * @param waitMs the bound after the wave is spawned, ms
   */
  constructor(
    size: number,
    private readonly onReady: () => void,
    private readonly waitMs = FIRST_WRITE_WAIT_MS,
  ) {
    this.unspawned = size;
    this.notRunning = size;
    if (size <= 0) this.fire();
  }

  /** Whether the first write was asked for; a shard started after it asks for an interim write of its own. */
  get ready(): boolean {
    return this.fired;
  }

  /** A shard's counter, whatever its place: shards beyond the first `size` count into what is left of it. */
  member(): WaveMember {
    let spawned = false;
    let running = false;
    const member: WaveMember = {
      spawned: () => {
        if (spawned) return;
        spawned = true;
        if (this.unspawned > 0 && --this.unspawned === 0 && !this.fired) this.timer = setTimeout(() => this.fire(), this.waitMs);
      },
      running: () => {
        member.spawned();
        if (running) return;
        running = true;
        if (this.notRunning > 0 && --this.notRunning === 0) this.fire();
      },
    };
    return member;
  }

  private fire(): void {
    if (this.fired) return;
    this.fired = true;
    clearTimeout(this.timer);
    this.onReady();
  }
}
