/**
 * Reads Bun's JUnit (test-controlled input) as a stream, cutting every long text node and attribute value to its
 * tail on the way in, so the file is never held whole. Only what the XML grammar makes unambiguous is cut, never
 * inside an entity or code point, marked as in util/text-cap.ts; what still does not fit is refused, never a pass.
 */
import { NotARegularFileError } from "../util/regular-file.ts";
import { cutMarker, INGEST_NOTE, MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { AMP, APOS, GT, LT, QUOTE, SEMI } from "../util/bytes.ts";

/** Largest JUnit text handed to the XML parser after the cuts, bytes, whatever the test count. */
export const MAX_JUNIT_BYTES = 16 * 1024 * 1024;

/** Extra JUnit bytes per test the preload counted as started: long names of many passing tests (bench/README.md). */
export const JUNIT_BYTES_PER_STARTED_TEST = 1024;

/** The most a JUnit may ever take after the cuts, bytes (the start count is test-controlled too). */
export const MAX_JUNIT_BYTES_CEILING = 256 * 1024 * 1024;

/** Extra bytes per failed test end: Bun writes each failure's message twice, each cut with a marker. */
export const JUNIT_BYTES_PER_FAILED_TEST = 2 * (MAX_TEXT_BYTES + 1024);

/**
 * The byte limit of a shard's JUnit after the cuts: the base plus the per-started and per-failed allowances.
 * @param testsStarted test starts the child preload counted (exec/marks.ts)
 * @param failedEnds test ends with a failure the events reported (0 without events)
 */
export function junitByteLimit(testsStarted: number, failedEnds = 0): number {
  const allowed =
    MAX_JUNIT_BYTES +
    JUNIT_BYTES_PER_STARTED_TEST * Math.max(0, testsStarted) +
    JUNIT_BYTES_PER_FAILED_TEST * Math.max(0, failedEnds);
  return Math.min(MAX_JUNIT_BYTES_CEILING, allowed);
}

/** The read limit of {@link junitByteLimit} in words, for a shard's reason. */
export function junitLimitText(limitBytes: number): string {
  const mib = (n: number) => `${Math.round((n / (1024 * 1024)) * 10) / 10} MiB`;
  return (
    `${mib(limitBytes)}: ${mib(MAX_JUNIT_BYTES)} + ${JUNIT_BYTES_PER_STARTED_TEST / 1024} KiB per test started + ` +
    `${JUNIT_BYTES_PER_FAILED_TEST / 1024} KiB per failed test end, at most ${mib(MAX_JUNIT_BYTES_CEILING)}, with ` +
    `every text and attribute cut to ` +
    `${MAX_TEXT_BYTES / 1024} KiB; one tag at most ${MAX_TEXT_BYTES / 1024} KiB`
  );
}

/** What is at Bun's JUnit path is not a regular file (a FIFO, a directory, a device). */
export { NotARegularFileError };

/** Bun's JUnit file cannot be read within the bounds. */
export class JUnitTooLargeError extends Error {
  override name = "JUnitTooLargeError";
}

/**
 * Where the cutter is. Inside a processing instruction, comment or CDATA a quote is only a character: read as
 * an attribute's, it would put later quotes out of step and a run of tags could be cut as one value.
 */
type State = "text" | "tag" | "attr" | "open" | "special";

const QMARK = 0x3f;
const BANG = 0x21;

/** What follows `<` for a processing instruction, a comment and a CDATA section, and how each ends. */
const SPECIALS: readonly { opening: string; end: Buffer }[] = [
  { opening: "?", end: Buffer.from("?>") },
  { opening: "!--", end: Buffer.from("-->") },
  { opening: "![CDATA[", end: Buffer.from("]]>") },
];

/** The streaming cutter: {@link JUnitShrinker.push} chunks, then {@link JUnitShrinker.end}; holds the output. */
export class JUnitShrinker {
  private state: State = "text";
  private quote = 0;
  /** In "open": the bytes after `<` so far (at most 8). */
  private opening = "";
  /** In "special": its end, and how many of its bytes were just seen. */
  private closing: Buffer = SPECIALS[0]!.end;
  private closingMatched = 0;
  /** The cut document so far, one buffer grown by doubling (not a copy per token, bench/README.md). */
  private out: Buffer = Buffer.allocUnsafe(64 * 1024);
  private outBytes = 0;
  /** Bytes of output already handed over by {@link JUnitShrinker.take}. */
  private takenBytes = 0;
  /** Where in `out` the markup being read begins: `take` hands over only what precedes it. */
  private markupStart = 0;
  /** The current text run or attribute value (only its last bytes once long). */
  private run: Buffer[] = [];
  private runBytes = 0;
  /** Bytes of the current run already dropped from its front. */
  private dropped = 0;
  private tagBytes = 0;

  /** @param expectedBytes the input's size when known: the initial buffer size (capped at `maxTotalBytes`). */
  constructor(
    private readonly maxRunBytes = MAX_TEXT_BYTES,
    private readonly maxTotalBytes = MAX_JUNIT_BYTES,
    expectedBytes = 0,
  ) {
    if (expectedBytes > this.out.length) this.out = Buffer.allocUnsafe(Math.min(maxTotalBytes, expectedBytes));
  }

  /** Start, in the chunk, of bytes not yet copied that go out as they are: copied in one piece (bench/README.md). */
  private spanStart = 0;

  /** Consumes one chunk (only read during the call). @throws JUnitTooLargeError past the bounds. */
  push(chunk: Buffer): void {
    let from = 0;
    this.spanStart = 0;
    // Text and quoted values are skipped with indexOf; only tag bytes outside quotes are read one by one.
    for (let i = 0; i < chunk.length; i++) {
      if (this.state === "text") {
        i = chunk.indexOf(LT, i);
        if (i === -1) break;
        this.endRun(chunk, from, i, false);
        // The bytes from spanStart are not copied yet: the `<` lands this far into the output.
        this.markupStart = this.outBytes + (i - this.spanStart);
        this.state = "open";
        this.opening = "";
        this.tagBytes = 0;
        from = i;
      } else if (this.state === "open") {
        const byte = chunk[i]!;
        if (this.opening === "" && byte !== QMARK && byte !== BANG) {
          this.state = "tag";
          i -= 1;
          continue;
        }
        this.opening += String.fromCharCode(byte);
        const special = SPECIALS.find((s) => s.opening === this.opening);
        if (special) {
          this.state = "special";
          this.closing = special.end;
          this.closingMatched = 0;
        } else if (!SPECIALS.some((s) => s.opening.startsWith(this.opening))) {
          // A tag (or a DOCTYPE): this byte is its first, read as a tag's.
          this.state = "tag";
          i -= 1;
        }
      } else if (this.state === "special") {
        const byte = chunk[i]!;
        if (byte === this.closing[this.closingMatched]) {
          if (++this.closingMatched === this.closing.length) {
            this.countTag(i + 1 - from);
            this.state = "text";
            from = i + 1;
          }
        } else if (byte === this.closing[0]) {
          // "--->" and "]]]>" end too: a repeated first byte keeps what it matched.
          this.closingMatched = this.closing[0] === this.closing[1] && this.closingMatched >= 2 ? 2 : 1;
        } else this.closingMatched = 0;
      } else if (this.state === "attr") {
        i = chunk.indexOf(this.quote, i);
        if (i === -1) break;
        this.endRun(chunk, from, i, true);
        this.state = "tag";
        from = i;
      } else {
        const byte = chunk[i]!;
        if (byte === QUOTE || byte === APOS) {
          this.countTag(i + 1 - from);
          this.state = "attr";
          this.quote = byte;
          from = i + 1;
        } else if (byte === GT) {
          this.countTag(i + 1 - from);
          this.state = "text";
          from = i + 1;
        }
      }
    }
    if (this.state !== "text" && this.state !== "attr") {
      this.countTag(chunk.length - from);
      this.emit(chunk, this.spanStart, chunk.length);
    } else {
      // A run that goes on in the next chunk is gathered (and cut if long).
      this.emit(chunk, this.spanStart, from);
      this.addRun(chunk.subarray(from));
    }
  }

  /** The cut document as text (what {@link take} has not handed over). @throws JUnitTooLargeError past the bounds. */
  end(): string {
    this.flushRun(false);
    return this.out.toString("utf8", 0, this.outBytes);
  }

  /**
   * Hands over and drops the output up to where character data may end (never splitting a code point);
   * "" when none. Taken after each push, the output stays about a chunk and the current tag.
   */
  take(): string {
    const cut = this.state === "text" ? this.outBytes : this.markupStart;
    if (cut === 0) return "";
    const piece = this.out.toString("utf8", 0, cut);
    this.out.copyWithin(0, cut, this.outBytes);
    this.outBytes -= cut;
    this.markupStart -= cut;
    this.takenBytes += cut;
    return piece;
  }

  /** Counts `n` more bytes of the current tag's own text. @throws JUnitTooLargeError past the cap. */
  private countTag(n: number): void {
    this.tagBytes += n;
    if (this.tagBytes > this.maxRunBytes) {
      throw new JUnitTooLargeError(`an XML tag (or comment, CDATA) longer than ${this.maxRunBytes} bytes`);
    }
  }

  /** Ends the run `chunk[from, to)`: a short run wholly in this chunk stays in the span; any other is cut. */
  private endRun(chunk: Buffer, from: number, to: number, inAttribute: boolean): void {
    if (this.runBytes === 0 && this.dropped === 0 && to - from <= this.maxRunBytes) return;
    this.emit(chunk, this.spanStart, from);
    this.addRun(chunk.subarray(from, to));
    this.flushRun(inAttribute);
    this.spanStart = to;
  }

  /** Appends `bytes[from, to)` to the output. @throws JUnitTooLargeError past the total cap. */
  private emit(bytes: Buffer, from = 0, to = bytes.length): void {
    const length = to - from;
    if (length <= 0) return;
    const end = this.outBytes + length;
    if (this.takenBytes + end > this.maxTotalBytes) {
      throw new JUnitTooLargeError(`over ${this.maxTotalBytes} bytes even with long texts cut`);
    }
    if (end > this.out.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.maxTotalBytes, Math.max(end, 2 * this.out.length)));
      this.out.copy(grown, 0, 0, this.outBytes);
      this.out = grown;
    }
    // Copied: the chunk's memory belongs to the caller.
    bytes.copy(this.out, this.outBytes, from, to);
    this.outBytes = end;
  }

  private addRun(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.run.push(Buffer.from(bytes));
    this.runBytes += bytes.length;
    // Keep the last maxRunBytes, plus slack for a safe cut point.
    if (this.runBytes > 2 * this.maxRunBytes + 64) {
      const all = Buffer.concat(this.run);
      const keep = this.maxRunBytes + 64;
      this.dropped += all.length - keep;
      this.run = [all.subarray(all.length - keep)];
      this.runBytes = keep;
    }
  }

  private flushRun(inAttribute: boolean): void {
    if (this.runBytes === 0 && this.dropped === 0) return;
    const all = Buffer.concat(this.run);
    this.run = [];
    this.runBytes = 0;
    const total = this.dropped + all.length;
    this.dropped = 0;
    if (total <= this.maxRunBytes) {
      this.emit(all);
      return;
    }
    let start = all.length - this.maxRunBytes;
    // Not inside an entity reference: a ';' before any '&' in the next few bytes ends one.
    for (let j = start; j < Math.min(all.length, start + 12); j++) {
      if (all[j] === AMP) break;
      if (all[j] === SEMI) {
        start = j + 1;
        break;
      }
    }
    while (start < all.length && ((all[start] ?? 0) & 0xc0) === 0x80) start += 1;
    const marker = cutMarker(total - (all.length - start), INGEST_NOTE);
    this.emit(Buffer.from(inAttribute ? marker.replace("\n", "&#10;") : marker));
    this.emit(all.subarray(start));
  }
}

/**
 * A JUnit document held whole, cut as {@link JUnitShrinker} would (unchanged when {@link hasNothingToCut}).
 * @param maxBytes the limit after the cuts
 * @throws JUnitTooLargeError when it is too large even after the cuts
 */
export function cutJUnitText(whole: Buffer, maxBytes = MAX_JUNIT_BYTES): string {
  if (whole.length <= maxBytes && hasNothingToCut(whole)) return whole.toString("utf8");
  const shrinker = new JUnitShrinker(MAX_TEXT_BYTES, maxBytes, whole.length);
  shrinker.push(whole);
  return shrinker.end();
}

/** Room below the cut length: more than the cutter may move a cut point (past an entity and a code point). */
const CUT_SLACK_BYTES = 64;

/**
 * Whether {@link JUnitShrinker} would return `bytes` unchanged: no `<`-free stretch past the cut length, no `<!`,
 * no processing instruction but a leading XML declaration. Never more lenient than the cutter
 * (test/text-cap.test.ts compares them).
 */
export function hasNothingToCut(bytes: Buffer, maxRunBytes = MAX_TEXT_BYTES): boolean {
  if (bytes.indexOf("<!") !== -1) return false;
  const declaration = bytes.indexOf("<?");
  if (declaration !== -1) {
    // Only `<?xml …?>` at the very start, ended before the next tag begins.
    if (declaration !== 0 || bytes.indexOf("<?", 1) !== -1) return false;
    const end = bytes.indexOf("?>", 2);
    const next = bytes.indexOf(LT, 1);
    if (end === -1 || (next !== -1 && next < end)) return false;
  }
  const longest = maxRunBytes - CUT_SLACK_BYTES;
  // `previous` is the index of the last `<` seen (-1: the start of the document).
  for (let previous = -1; bytes.length - previous > longest; ) {
    const next = bytes.lastIndexOf(LT, previous + longest);
    if (next <= previous) return false;
    previous = next;
  }
  return true;
}
