/**
 * The runner's half of the plan barrier: at each file's first test the preload waits until the runner has
 * received that `start` event, and with it the file's `found` plan, which Bun loses if the process dies at once.
 * The reply is the count file's second u32, written through a descriptor held since before the spawn; never a
 * mapping, since a test truncating the file would make a store fault the runner.
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
