/**
 * Caps on test-written text, so the runner's memory and the reports stay
 * bounded however large a failure message is (bench/README.md: a 20 MiB
 * `Error` message once took the runner to 1.26 GB and wrote 42 MB reports).
 *
 * Text is cut twice, with the same marker:
 *  1. at ingestion (inspector events, Bun's JUnit file), where nothing but
 *     the bytes is known: {@link MAX_TEXT_BYTES} of the tail are kept;
 *  2. in every report, where the shard's log path is known: {@link capText}
 *     cuts again and names the log. A text cut once already is re-marked
 *     with the total count, so the number a reader sees is honest.
 * The full text is always in the shard's log, where Bun prints it.
 */
import { BACKSLASH, QUOTE } from "./bytes.ts";

/** Bytes of UTF-8 kept of any one test-written string (failure message, details, name), tail first: 64 KiB. */
export const MAX_TEXT_BYTES = 64 * 1024;

/** `[shardguard: first N bytes cut; NOTE]` and a newline: the marker put in front of a cut text. */
export const cutMarker = (cut: number, note: string) => `[shardguard: first ${cut} bytes cut; ${note}]\n`;

/** A marker left by an earlier cut, at the very start of a text. */
const EARLIER_MARKER = /^\[shardguard: first (\d+) bytes cut; [^\]\n]*\]\n/;

/** The note of an ingestion cut, before the shard's log path is known. */
export const INGEST_NOTE = "full text in the shard log";

/**
 * Caps `text` at `maxBytes` bytes of UTF-8, keeping the tail (the end of a
 * failure or log is where the error usually is) and putting a one-line
 * marker in front that says how many bytes were cut and, via `note`, where
 * the full text is (e.g. `"full log: .shardguard/logs/3-a.log"`).
 *
 * - Text within the limit is returned unchanged, unless it starts with the
 *   marker of an earlier cut: that marker is replaced by one with `note`.
 * - A text cut before is cut as one: the new marker counts the bytes cut
 *   both times.
 * - The result, marker included, is at most `maxBytes` bytes, unless the
 *   marker alone is longer; then only the marker is returned.
 * - The cut never splits a code point.
 *
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
  // UTF-8 continuation bytes look like 10xxxxxx; move forward to a code point start.
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return marker(start) + bytes.subarray(start).toString("utf8");
}

/**
 * Cuts every string literal longer than `maxBytes` bytes in a JSON text to
 * its tail, behind a {@link cutMarker} (note {@link INGEST_NOTE}), without
 * parsing the document: one pass over the bytes, so an inspector message
 * with a 20 MiB error message never becomes a 20 MiB JavaScript string.
 *
 * The result is valid JSON whenever the input is: cuts never split an
 * escape sequence or a UTF-8 code point (a surrogate pair written as two
 * `\u` escapes may lose its first half; readers replace lone halves).
 * Input that is not JSON comes out as garbage of bounded size.
 *
 * @param json UTF-8 bytes of one JSON document
 * @returns the document as text
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

/**
 * The first position at or after `p` inside the string content
 * `[start, end)` where a cut splits neither an escape (`\n`, `\uXXXX`) nor
 * a UTF-8 code point.
 */
function safeTailStart(buf: Buffer, start: number, end: number, p: number): number {
  for (;;) {
    let moved = false;
    for (let q = p - 1; q >= Math.max(start, p - 5); q--) {
      if (buf[q] !== BACKSLASH) continue;
      let r = q;
      while (r - 1 >= start && buf[r - 1] === BACKSLASH) r -= 1;
      // q starts an escape when an even number of backslashes precede it.
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
