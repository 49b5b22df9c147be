/**
 * The framing of Bun's reverse-connect inspector socket
 * (`BUN_INSPECT_CONNECT_TO=unix://<path>` or `bun --inspect-wait=unix:<path>`, docs/bun-behaviour.md): in both
 * directions every message is a 4-byte big-endian unsigned length followed
 * by that many bytes of UTF-8 JSON. The length counts BYTES, not UTF-16
 * code units: measured on Bun 1.4.4, a request whose length counted
 * characters of a non-ASCII text got a -32700 "Message must be in JSON
 * format" reply and desynchronised the stream, and Bun's own frames of
 * non-ASCII test names carry their byte length.
 */

import { JsonStreamCapper } from "../util/json-stream-cap.ts";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";

/** Bytes of the length prefix. */
export const FRAME_HEADER_BYTES = 4;

/**
 * Most text kept of one streamed frame once its strings are cut, bytes:
 * 8 MiB. Bun's messages are a few keys around their strings, each then at
 * most 64 KiB; a frame still larger is not one of them, is not delivered,
 * and is counted (the channel's `oversized`).
 */
export const MAX_KEPT_BYTES = 8 * 1024 * 1024;

/**
 * Largest frame read whole, bytes: 1 MiB. A larger one, of any length, goes
 * through a streaming string capper as it arrives (util/json-stream-cap.ts)
 * and is never held whole: a 20 MiB error message buffered first raised the
 * runner's peak by ~20 MiB, and a `found` with a 40 MiB test name, once
 * skipped as too long, took the failing test out of a killed shard's
 * reports. Bun 1.4.4 did not deliver a 100 MiB error message at all
 * (bench/README.md, failure-rss.ts), while 20 MiB ones arrive and must keep
 * their tail.
 */
export const WHOLE_FRAME_BYTES = 1024 * 1024;

/** Bounds of a {@link FrameReader}, bytes; the defaults are the channel's. */
export interface FrameLimits {
  /** Frames longer than this are streamed (default {@link WHOLE_FRAME_BYTES}). */
  wholeBytes?: number;
  /** Most text kept of one streamed frame (default {@link MAX_KEPT_BYTES}); a frame over it goes to `onOversized`. */
  maxKeptBytes?: number;
}

/** One frame: header and UTF-8 body, ready to write to the socket. */
export function encodeFrame(text: string): Buffer {
  const body = Buffer.from(text, "utf8");
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * Incremental parser of length-prefixed frames. Feed it the socket's chunks
 * in order with {@link FrameReader.push}. A frame of at most `wholeBytes`
 * goes to `onFrame` as it is; a longer one, of any length, to `onText` as
 * text with every JSON string cut to its tail (util/text-cap.ts
 * MAX_TEXT_BYTES) as it streams past, or to `onOversized` when that text is
 * still over `maxKeptBytes`; the stream stays in step. Frames may be split
 * anywhere, the header included, and one chunk may hold many frames.
 *
 * Memory: at most one partial frame (≤ `wholeBytes`, plus the capped text of
 * a streamed one) and up to 3 header bytes are held between calls; a frame
 * that arrives whole inside one chunk is handed over as a view of that
 * chunk without a copy.
 */
export class FrameReader {
  /** Header bytes collected so far (a header split across chunks). */
  private readonly header = Buffer.alloc(FRAME_HEADER_BYTES);
  private headerFilled = 0;
  /** The frame being filled, or null between frames. */
  private body: Buffer | null = null;
  private bodyFilled = 0;
  /** The streamed frame in progress, and its bytes still to come. */
  private capper: JsonStreamCapper | null = null;
  private streamRemaining = 0;
  private streamLength = 0;
  private readonly wholeBytes: number;
  private readonly maxKeptBytes: number;

  /**
   * @param onFrame gets each frame of at most `wholeBytes`; the buffer may be
   *   a view of the pushed chunk, valid only during the call (copy it to keep it)
   * @param onText gets each longer frame's text, its strings cut
   * @param onOversized gets the declared length, bytes, of a streamed frame over `maxKeptBytes` once cut
   * @throws RangeError when `wholeBytes` is not a non-negative integer
   */
  constructor(
    private readonly onFrame: (body: Buffer) => void,
    private readonly onText: (text: string) => void,
    private readonly onOversized: (declaredBytes: number) => void,
    limits: FrameLimits = {},
  ) {
    this.wholeBytes = limits.wholeBytes ?? WHOLE_FRAME_BYTES;
    this.maxKeptBytes = limits.maxKeptBytes ?? MAX_KEPT_BYTES;
    if (!Number.isInteger(this.wholeBytes) || this.wholeBytes < 0) {
      throw new RangeError(`FrameReader: wholeBytes must be a non-negative integer, got ${this.wholeBytes}`);
    }
  }

  /** Bytes held for the frame in progress (diagnostics and tests). */
  get bufferedBytes(): number {
    return this.headerFilled + this.bodyFilled;
  }

  /** Consumes one chunk. Exceptions thrown by the callbacks propagate. */
  push(chunk: Uint8Array): void {
    const data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let at = 0;
    while (at < data.length) {
      if (this.capper !== null) {
        at = this.streamInto(data, at);
        continue;
      }
      if (this.body !== null) {
        at = this.fillBody(data, at);
        continue;
      }
      // Between frames: read the header, from this chunk alone when it is whole.
      let length: number;
      if (this.headerFilled === 0 && data.length - at >= FRAME_HEADER_BYTES) {
        length = data.readUInt32BE(at);
        at += FRAME_HEADER_BYTES;
      } else {
        const n = Math.min(FRAME_HEADER_BYTES - this.headerFilled, data.length - at);
        data.copy(this.header, this.headerFilled, at, at + n);
        this.headerFilled += n;
        at += n;
        if (this.headerFilled < FRAME_HEADER_BYTES) return;
        this.headerFilled = 0;
        length = this.header.readUInt32BE(0);
      }
      if (length > this.wholeBytes) {
        this.capper = new JsonStreamCapper(MAX_TEXT_BYTES, this.maxKeptBytes);
        this.streamRemaining = length;
        this.streamLength = length;
        continue;
      }
      if (data.length - at >= length) {
        // Whole frame inside this chunk: hand over a view, no copy.
        const body = data.subarray(at, at + length);
        at += length;
        this.onFrame(body);
        continue;
      }
      this.body = Buffer.allocUnsafe(length);
      this.bodyFilled = 0;
    }
  }

  /** Feeds the streamed frame in progress from `data[at…]`; the position after what it took. */
  private streamInto(data: Buffer, at: number): number {
    const capper = this.capper!;
    const n = Math.min(this.streamRemaining, data.length - at);
    capper.push(data.subarray(at, at + n));
    this.streamRemaining -= n;
    if (this.streamRemaining === 0) {
      this.capper = null;
      if (capper.overflowed) this.onOversized(this.streamLength);
      else this.onText(capper.end());
    }
    return at + n;
  }

  /** Fills the split frame in progress from `data[at…]`; the position after what it took. */
  private fillBody(data: Buffer, at: number): number {
    const body = this.body!;
    const n = Math.min(body.length - this.bodyFilled, data.length - at);
    data.copy(body, this.bodyFilled, at, at + n);
    this.bodyFilled += n;
    if (this.bodyFilled === body.length) {
      this.body = null;
      this.bodyFilled = 0;
      this.onFrame(body);
    }
    return at + n;
  }
}
