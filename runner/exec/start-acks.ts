/**
 * The runner's half of the plan barrier (runner/child/shard-preload.ts, 2.):
 * at the first test of each file the preload waits, synchronously, until
 * the runner says it has received that test's `start` event, and with it
 * every event Bun sent before it: the file's `found` plan. Bun loses the
 * tail of its event queue when the process dies, and a test that kills its
 * process group within milliseconds of loading otherwise takes the names of
 * every test it ran with it (the start count still counts them).
 *
 * The reply is the second little-endian u32 of the start-count file
 * (exec/marks.ts): the number of `start` events received so far, written
 * through a descriptor the runner opened before the spawn (a test that
 * replaces the path cannot redirect the write), once per file: at the first
 * `start` after a `found` event. Never a mapping: a test that truncates the
 * file would make a store into one fault the runner.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { startCountPath } from "./marks.ts";

/** Byte offset of the runner's reply in the start-count file. */
export const ACK_OFFSET = 4;

/** Counts `start` events and answers the preload's plan barrier. */
export class StartAcks {
  private fd: number | null;
  private starts = 0;
  private planPending = false;
  private readonly word = Buffer.alloc(4);

  /** Opens the start-count file of `marksFile` (after prepareStartCount); on failure the preload's wait runs out. */
  constructor(marksFile: string) {
    try {
      this.fd = openSync(startCountPath(marksFile), "r+");
    } catch {
      this.fd = null;
    }
  }

  /** A `found` event arrived: the next `start` is a file's first (or follows more of its plan). */
  found(): void {
    this.planPending = true;
  }

  /** A `start` event arrived; answers the barrier when a `found` came since the last answer. */
  start(): void {
    this.starts += 1;
    if (!this.planPending || this.fd === null) return;
    this.planPending = false;
    try {
      this.word.writeUInt32LE(this.starts >>> 0, 0);
      writeSync(this.fd, this.word, 0, 4, ACK_OFFSET);
    } catch {
      // The preload stops waiting after its bound: the plan may then be lost, never a pass.
    }
  }

  /** Closes the descriptor; idempotent. */
  close(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // Nothing to do: the file is the attempt's own.
    }
    this.fd = null;
  }
}
