/**
 * Reads Bun's JUnit file as a stream and cuts every long text node and
 * attribute value to its tail on the way in, so the runner never holds the
 * file whole: a test that throws a 20 MiB message makes Bun write it twice
 * (the `message` attribute and the element text, 42 MB), and a test can
 * write anything to that path (it is test-controlled input).
 *
 * Only what the XML grammar makes unambiguous is cut: character data
 * between tags and quoted attribute values inside tags. A cut never splits
 * an entity reference (`&#10;`) or a UTF-8 code point, and is marked like
 * every other cut (runner/util/text-cap.ts). A tag whose own text (outside
 * quotes; also comments and CDATA, which Bun never writes) runs past the cap,
 * or a document still too large after the cuts, is refused: the caller then
 * treats the JUnit as unreadable, never as a pass. The file is read by
 * results/junit-read.ts.
 */
import { NotARegularFileError } from "../util/regular-file.ts";
import { cutMarker, INGEST_NOTE, MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { AMP, APOS, GT, LT, QUOTE, SEMI } from "../util/bytes.ts";

/** Largest JUnit text handed to the XML parser after the cuts, bytes, whatever the test count: 16 MiB (tens of thousands of tests). */
export const MAX_JUNIT_BYTES = 16 * 1024 * 1024;

/**
 * Bytes of JUnit allowed per test the child preload counted as started, on
 * top of {@link MAX_JUNIT_BYTES}: 1 KiB. A passing file of 100,000 tests
 * with long describe and test names makes Bun write about 19 MB (about 190
 * bytes a testcase), which a fixed 16 MiB refused as unreadable.
 */
export const JUNIT_BYTES_PER_STARTED_TEST = 1024;

/** The most a JUnit may ever take after the cuts, bytes: 256 MiB (the start count is test-controlled too). */
export const MAX_JUNIT_BYTES_CEILING = 256 * 1024 * 1024;

/**
 * Bytes of JUnit allowed per failed test end the inspector events reported,
 * on top of the per-test allowance: Bun writes a failure's message twice
 * (the `message` attribute and the element's text), each cut to
 * MAX_TEXT_BYTES with a marker. 1,000 tests failing with 12 KB messages
 * made a 24 MB JUnit that the per-test allowance alone refused as
 * unreadable, so the shard read as crashed instead of failed.
 */
export const JUNIT_BYTES_PER_FAILED_TEST = 2 * (MAX_TEXT_BYTES + 1024);

/**
 * The byte limit of a shard's JUnit after the cuts: {@link MAX_JUNIT_BYTES}
 * plus {@link JUNIT_BYTES_PER_STARTED_TEST} per started test and
 * {@link JUNIT_BYTES_PER_FAILED_TEST} per failed test end, at most
 * {@link MAX_JUNIT_BYTES_CEILING}.
 *
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

/**
 * The read limit of {@link junitByteLimit} in words, for a shard's reason:
 * e.g. `16.3 MiB: 16 MiB + 1 KiB per test started + 130 KiB per failed test
 * end, at most 256 MiB, with every text and attribute cut to 64 KiB; one tag at most 64 KiB`.
 */
export function junitLimitText(limitBytes: number): string {
  const mib = (n: number) => `${Math.round((n / (1024 * 1024)) * 10) / 10} MiB`;
  return (
    `${mib(limitBytes)}: ${mib(MAX_JUNIT_BYTES)} + ${JUNIT_BYTES_PER_STARTED_TEST / 1024} KiB per test started + ` +
    `${JUNIT_BYTES_PER_FAILED_TEST / 1024} KiB per failed test end, at most ${mib(MAX_JUNIT_BYTES_CEILING)}, with every text and attribute cut to ` +
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
 * Where the cutter is: character data, a tag outside quotes, a quoted
 * attribute value, the first bytes after a `<` (which tell a processing
 * instruction, comment or CDATA section from a tag), or inside one of those
 * three, where a quote is only a character: read as an attribute's, a
 * quote in `<?xml version="?>` or a comment put every later quote out of
 * step, and a run of tags could be cut as one value (a failing testcase
 * dropped from a document that still parsed).
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

/**
 * The streaming cutter: feed chunks with {@link JUnitShrinker.push}, then
 * {@link JUnitShrinker.end}. Memory: the output plus at most about twice
 * `maxRunBytes` for the run being read.
 */
export class JUnitShrinker {
  private state: State = "text";
  private quote = 0;
  /** In "open": the bytes after `<` so far (at most 8). */
  private opening = "";
  /** In "special": its end, and how many of its bytes were just seen. */
  private closing: Buffer = SPECIALS[0]!.end;
  private closingMatched = 0;
  /**
   * The cut document so far, in one buffer grown by doubling: a copy per
   * token (a Buffer each for ~10 tokens per testcase) made 100,000 testcases
   * cost hundreds of MiB of small objects (bench/README.md).
   */
  private out: Buffer = Buffer.allocUnsafe(64 * 1024);
  private outBytes = 0;
  /** Bytes of output already handed over by {@link JUnitShrinker.take}. */
  private takenBytes = 0;
  /** Where in `out` the markup being read (a tag, comment, …) begins: `take` hands over only what precedes it. */
  private markupStart = 0;
  /** The current text run or attribute value (only its last bytes once long). */
  private run: Buffer[] = [];
  private runBytes = 0;
  /** Bytes of the current run already dropped from its front. */
  private dropped = 0;
  private tagBytes = 0;

  /** @param expectedBytes the input's size when known: the output buffer starts that large (capped at `maxTotalBytes`). */
  constructor(
    private readonly maxRunBytes = MAX_TEXT_BYTES,
    private readonly maxTotalBytes = MAX_JUNIT_BYTES,
    expectedBytes = 0,
  ) {
    if (expectedBytes > this.out.length) this.out = Buffer.allocUnsafe(Math.min(maxTotalBytes, expectedBytes));
  }

  /**
   * Start, in the chunk being pushed, of the bytes that go to the output as
   * they are and have not been copied yet: every tag and every short run
   * (nearly the whole document), copied in one piece when a long run needs
   * cutting or the chunk ends. A copy per token (~10 per testcase) was the
   * largest cost of reading 100,000 testcases (bench/README.md).
   */
  private spanStart = 0;

  /** Consumes one chunk (only read during the call: it may be reused afterwards). @throws JUnitTooLargeError past the bounds. */
  push(chunk: Buffer): void {
    let from = 0;
    this.spanStart = 0;
    // Text and quoted values are skipped with indexOf (a native byte search);
    // only the bytes of tags outside quotes are looked at one by one.
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
          // Nearly every tag: an element's start or end tag.
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
   * The output so far that ends where character data may end (the markup
   * being read, and a text run or attribute value still gathered, stay), as
   * text, and drops it from the output; "" when there is none. The piece
   * ends just before a `<` or at the end of character data, so it never
   * splits a UTF-8 code point. Taken after each push, the output never grows
   * past about a chunk and the current tag.
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

  /**
   * Ends the run whose last bytes are `chunk[from, to)`. A short run that
   * lies wholly in this chunk (nearly every one) stays in the span that goes
   * to the output as it is; any other is gathered and cut.
   */
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
    // Keep only the last maxRunBytes (plus slack for a safe cut point).
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
 * The text of a JUnit document held whole, as {@link JUnitShrinker} cuts
 * it: the document itself when {@link hasNothingToCut} says so, else
 * through the cutter.
 *
 * @param maxBytes the limit after the cuts
 * @throws JUnitTooLargeError when it is too large even after the cuts
 */
export function cutJUnitText(whole: Buffer, maxBytes = MAX_JUNIT_BYTES): string {
  if (whole.length <= maxBytes && hasNothingToCut(whole)) return whole.toString("utf8");
  const shrinker = new JUnitShrinker(MAX_TEXT_BYTES, maxBytes, whole.length);
  shrinker.push(whole);
  return shrinker.end();
}

/**
 * Room kept below the cut length by {@link hasNothingToCut}, bytes: more
 * than the cutter may move its cut point forward (past an entity
 * reference, at most 12 bytes, and a UTF-8 code point, at most 3).
 */
const CUT_SLACK_BYTES = 64;

/**
 * Whether {@link JUnitShrinker} would hand `bytes` over unchanged, checked
 * without running it: true when no stretch of the document without a `<`
 * is longer than `maxRunBytes` less CUT_SLACK_BYTES and it holds no
 * comment, CDATA section or DOCTYPE (`<!`, which Bun never writes) and no
 * processing instruction but an XML declaration at the start. A text node
 * then is shorter than the cut length; so is a tag (outside its values);
 * an attribute value longer than the cut length holds a `<` in the tail the
 * cutter would keep, which the XML reader refuses either way. A true answer
 * is therefore never more lenient than the cutter: the reader gets the
 * cutter's text, or a text it refuses as the cutter's would have been
 * (test/text-cap.test.ts compares them on generated documents).
 *
 * One backward search per `maxRunBytes` stretch: ~0.2 ms for 10 MB.
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
