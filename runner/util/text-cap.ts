/**
 * Caps on test-written text, so memory and reports stay bounded however large a failure message is
 * (bench/README.md, "Where the time goes"). Cut at ingestion, then again per report with the log
 * named; the full text is always in the shard's log.
 */
import { BACKSLASH, QUOTE } from "./bytes.ts";

/** Bytes of UTF-8 kept of any one test-written string, tail first. */
export const MAX_TEXT_BYTES = 64 * 1024;

/** The marker put in front of a cut text: `[shardguard: first N bytes cut; NOTE]` and a newline. */
export const cutMarker = (cut: number, note: string) => `[shardguard: first ${cut} bytes cut; ${note}]\n`;

const EARLIER_MARKER = /^\[shardguard: first (\d+) bytes cut; [^\]\n]*\]\n/;

/** The note of an ingestion cut, made before the shard's log path is known. */
export const INGEST_NOTE = "full text in the shard log";

/**
 * Caps `text` at `maxBytes` bytes of UTF-8, marker included, keeping the tail (where the error usually
 * is); an earlier cut's marker is replaced and its count added, so the figure shown is honest.
 * @throws RangeError when `maxBytes` is negative or not an integer.
 */
export function capText(text: string, maxBytes: number, note: string): string {
  if (!Number.isInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`capText: maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  let earlier = 0;
  const previous = EARLIER_MARKER.exec(text);
  if (previous) {
    earlier = Number(previous[1]);
    text = text.slice(previous[0].length);
  }
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes && !previous) return text;

  const marker = (cut: number) => cutMarker(earlier + cut, note);
  // Reserve room for the widest possible count, so the real marker always fits.
  const budget = maxBytes - Buffer.byteLength(marker(bytes.length), "utf8");
  if (budget <= 0) return marker(bytes.length);
  if (bytes.length <= budget) return marker(0) + text;

  let start = bytes.length - budget;
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return marker(start) + bytes.subarray(start).toString("utf8");
}

/**
 * Cuts every string literal of a JSON document's bytes longer than `maxBytes` to its tail, without
 * parsing, so a huge message never becomes a huge string. Valid JSON in, valid JSON out.
 */
export function capJsonStrings(json: Buffer, maxBytes = MAX_TEXT_BYTES): string {
  if (json.length <= maxBytes) return json.toString("utf8");
  const parts: string[] = [];
  let copied = 0;
  let i = 0;
  while (i < json.length) {
    if (json[i] !== QUOTE) {
      i += 1;
      continue;
    }
    const start = i + 1;
    let end = start;
    while (end < json.length && json[end] !== QUOTE) end += json[end] === BACKSLASH ? 2 : 1;
    end = Math.min(end, json.length);
    if (end - start > maxBytes) {
      const keep = safeTailStart(json, start, end, end - maxBytes);
      parts.push(json.subarray(copied, start).toString("utf8"));
      parts.push(JSON.stringify(cutMarker(keep - start, INGEST_NOTE)).slice(1, -1));
      copied = keep;
    }
    i = end + 1;
  }
  parts.push(json.subarray(copied).toString("utf8"));
  return parts.join("");
}

/** The first position at or after `p` in `[start, end)` that splits neither an escape nor a code point. */
function safeTailStart(buf: Buffer, start: number, end: number, p: number): number {
  for (;;) {
    let moved = false;
    for (let q = p - 1; q >= Math.max(start, p - 5); q--) {
      if (buf[q] !== BACKSLASH) continue;
      let r = q;
      while (r - 1 >= start && buf[r - 1] === BACKSLASH) r -= 1;
      if ((q - r) % 2 === 0) {
        const length = buf[q + 1] === 0x75 /* u */ ? 6 : 2;
        if (p < q + length) {
          p = q + length;
          moved = true;
        }
      }
      break;
    }
    while (p < end && ((buf[p] ?? 0) & 0xc0) === 0x80) {
      p += 1;
      moved = true;
    }
    if (!moved || p >= end) return Math.min(p, end);
  }
}
