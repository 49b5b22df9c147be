/**
 * Bun's reverse-connect inspector framing (docs/bun-behaviour.md): each message is a 4-byte big-endian length and
 * that many bytes of UTF-8 JSON. The length counts bytes, not UTF-16 units: Bun desynchronises otherwise.
 */

import { JsonStreamCapper } from "../util/json-stream-cap.ts";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";

/** Bytes of the length prefix. */
export const FRAME_HEADER_BYTES = 4;

/** Most text kept of one streamed frame once its strings are cut, bytes; a larger frame is counted, not delivered. */
export const MAX_KEPT_BYTES = 8 * 1024 * 1024;

/**
 * Largest frame read whole, bytes. A larger one streams through a string capper (util/json-stream-cap.ts), never
 * held whole, so a huge error or test name keeps its tail without the memory (bench/README.md, failure-rss.ts).
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
 * Incremental parser of length-prefixed frames, fed chunks in order ({@link FrameReader.push}), split anywhere. Up to
 * `wholeBytes` a frame goes to `onFrame`, often as a view of the chunk; longer, to `onText` with its strings cut
 * (or `onOversized` when still over `maxKeptBytes`). Holds at most one partial frame between calls.
 */
export class FrameReader {
  private readonly header = Buffer.alloc(FRAME_HEADER_BYTES);
  private headerFilled = 0;
  private body: Buffer | null = null;
  private bodyFilled = 0;
  /** The streamed frame in progress. */
  private capper: JsonStreamCapper | null = null;
  private streamRemaining = 0;
  private streamLength = 0;
  private readonly wholeBytes: number;
  private readonly maxKeptBytes: number;

  /**
   * `onFrame`'s buffer is valid only during the call; `onOversized` gets the declared length, bytes.
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
