/**
 * {@link capJsonStrings} for a JSON document that arrives in pieces and is never held whole: large
 * inspector frames (events/frames.ts; bench/README.md, "Where the time goes"). Memory: output plus one window.
 */
import { cutMarker, INGEST_NOTE, MAX_TEXT_BYTES } from "./text-cap.ts";
import { BACKSLASH, QUOTE } from "./bytes.ts";

const LOWER_U = 0x75;

interface Piece {
  bytes: Buffer;
  escape: number;
  afterBackslash: boolean;
}

/** Streaming string capper: {@link JsonStreamCapper.push} the bytes in order, then {@link JsonStreamCapper.end}. */
export class JsonStreamCapper {
  private readonly out: Buffer[] = [];
  private inString = false;
  private escape = 0;
  private afterBackslash = false;
  private pieces: Piece[] = [];
  private pieceBytes = 0;
  private dropped = 0;
  private kept = 0;
  private overflow = false;

  /** `maxBytes`: longest string kept whole; `maxKeptBytes`: most output kept (bytes). */
  constructor(
    private readonly maxBytes: number = MAX_TEXT_BYTES,
    private readonly maxKeptBytes: number = Infinity,
  ) {}

  /** True once the output passed `maxKeptBytes`: {@link end} is then cut short, not JSON. */
  get overflowed(): boolean {
    return this.overflow;
  }

  private emit(bytes: Buffer): void {
    if (this.overflow) return;
    if (this.kept + bytes.length > this.maxKeptBytes) {
      this.overflow = true;
      return;
    }
    this.kept += bytes.length;
    this.out.push(bytes);
  }

  /** Consumes the next bytes of the document. */
  push(chunk: Uint8Array): void {
    const data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let at = 0;
    while (at < data.length) {
      if (!this.inString) {
        const quote = data.indexOf(QUOTE, at);
        const end = quote < 0 ? data.length : quote + 1;
        this.emit(Buffer.from(data.subarray(at, end)));
        at = end;
        if (quote >= 0) this.startString();
        continue;
      }
      const start = at;
      const state = { escape: this.escape, afterBackslash: this.afterBackslash };
      let closed = -1;
      for (; at < data.length; at++) {
        const byte = data[at]!;
        if (this.escape > 0) {
          if (this.afterBackslash && byte === LOWER_U) this.escape = 5;
          this.afterBackslash = false;
          this.escape -= 1;
        } else if (byte === BACKSLASH) {
          this.escape = 1;
          this.afterBackslash = true;
        } else if (byte === QUOTE) {
          closed = at;
          break;
        }
      }
      this.addContent(data.subarray(start, closed < 0 ? at : closed), state);
      if (closed >= 0) {
        this.endString();
        this.emit(Buffer.from([QUOTE]));
        at = closed + 1;
      }
    }
  }

  /** The capped document as text. An unterminated string is emitted as it stands. */
  end(): string {
    if (this.inString) this.endString();
    return Buffer.concat(this.out).toString("utf8");
  }

  private startString(): void {
    this.inString = true;
    this.escape = 0;
    this.afterBackslash = false;
    this.pieces = [];
    this.pieceBytes = 0;
    this.dropped = 0;
  }

  private addContent(bytes: Buffer, state: { escape: number; afterBackslash: boolean }): void {
    if (bytes.length === 0) return;
    this.pieces.push({ bytes: Buffer.from(bytes), ...state });
    this.pieceBytes += bytes.length;
    // The cut is chosen at the end, so keep a window of more than maxBytes.
    while (this.pieces.length > 1 && this.pieceBytes - this.pieces[0]!.bytes.length > this.maxBytes) {
      const first = this.pieces.shift()!;
      this.pieceBytes -= first.bytes.length;
      this.dropped += first.bytes.length;
    }
  }

  private endString(): void {
    this.inString = false;
    const total = this.dropped + this.pieceBytes;
    const window = Buffer.concat(this.pieces.map((p) => p.bytes));
    const first = this.pieces[0];
    this.pieces = [];
    this.pieceBytes = 0;
    if (total <= this.maxBytes) {
      this.emit(window);
      return;
    }
    const keep = this.safeCut(
      window,
      window.length - this.maxBytes,
      first?.escape ?? 0,
      first?.afterBackslash ?? false,
    );
    this.emit(Buffer.from(JSON.stringify(cutMarker(this.dropped + keep, INGEST_NOTE)).slice(1, -1), "utf8"));
    this.emit(window.subarray(keep));
  }

  private safeCut(window: Buffer, from: number, escapeLeft: number, afterBackslash: boolean): number {
    for (let i = 0; i < window.length; i++) {
      const byte = window[i]!;
      if (i >= from && escapeLeft === 0 && (byte & 0xc0) !== 0x80) return i;
      if (escapeLeft > 0) {
        if (afterBackslash && byte === LOWER_U) escapeLeft = 5;
        afterBackslash = false;
        escapeLeft -= 1;
      } else if (byte === BACKSLASH) {
        escapeLeft = 1;
        afterBackslash = true;
      }
    }
    return window.length;
  }
}
