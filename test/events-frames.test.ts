/**
 * The length-prefixed framing of Bun's reverse-connect inspector socket
 * (runner/events/frames.ts), on the bytes a REAL `bun --inspect-wait=unix:`
 * child sends: recorded once from a child whose test has a non-ASCII name
 * and fails with a 100 KiB message, then fed to the parser cut at every
 * chunk size that matters. The recorder runs the child with the shard
 * preload and answers the end-of-run barrier like the runner does, so the
 * recording is the whole run, not a tail cut short at exit.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SHARD_PRELOAD } from "../runner/exec/bun-command.ts";
import { encodeFrame, FrameReader, type FrameLimits } from "../runner/events/frames.ts";
import { END_OF_RUN_EXPRESSION } from "../runner/events/inspector.ts";
import { acknowledgeEndOfRun, prepareStartCount } from "../runner/exec/marks.ts";
import { socketDirFor, socketPathFor } from "../runner/events/socket-dir.ts";
import { JsonStreamCapper } from "../runner/util/json-stream-cap.ts";
import { capJsonStrings } from "../runner/util/text-cap.ts";
import { tempDir } from "./helpers/cli.ts";

const NAME = "grüße ✓ 日本語 😀";
let root = "";
/** Every byte the child sent, in order, and how the kernel cut it into reads. */
let recorded = Buffer.alloc(0);
let reads = 0;

beforeAll(async () => {
  root = tempDir("sg-frames-");
  writeFileSync(
    join(root, "names.test.ts"),
    `import { expect, test } from "bun:test";\ntest(${JSON.stringify(NAME)}, () => { throw new Error("ü".repeat(50 * 1024) + "END"); });\ntest("plain", () => expect(1).toBe(1));\n`,
  );
  const socketPath = socketPathFor(socketDirFor(join(root, "run")), 1);
  // The preload waits at the end for the acknowledgement in its count file.
  const marks = join(root, "shard.marks");
  prepareStartCount(marks);
  const chunks: Buffer[] = [];
  const replies: { id?: number; result?: { result?: { objectId?: string } } }[] = [];
  const onMessage = (text: string) => {
    const message = JSON.parse(text) as (typeof replies)[number];
    if (message.id !== undefined) replies.push(message);
  };
  const barrier = new FrameReader(
    (body) => onMessage(body.toString("utf8")),
    onMessage,
    () => {},
  );
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  const server = Bun.listen<undefined>({
    unix: socketPath,
    socket: {
      open(socket) {
        const requests = [
          { id: 1, method: "TestReporter.enable" },
          { id: 2, method: "LifecycleReporter.enable" },
          { id: 3, method: "Inspector.initialized" },
          { id: 4, method: "Runtime.evaluate", params: { expression: END_OF_RUN_EXPRESSION } },
          // Non-ASCII in OUR frame: Bun must read its length as bytes too.
          {
            id: 7,
            method: "Runtime.evaluate",
            params: { expression: `${JSON.stringify(NAME)}.length`, returnByValue: true },
          },
        ];
        socket.write(Buffer.concat(requests.map((r) => encodeFrame(JSON.stringify(r)))));
      },
      data(socket, chunk) {
        chunks.push(Buffer.from(chunk));
        barrier.push(chunk);
        for (const reply of replies.splice(0)) {
          if (reply.id === 4)
            socket.write(
              encodeFrame(
                JSON.stringify({
                  id: 5,
                  method: "Runtime.awaitPromise",
                  params: { promiseObjectId: reply.result?.result?.objectId },
                }),
              ),
            );
          if (reply.id === 5) acknowledgeEndOfRun(marks);
        }
      },
      close() {
        done();
      },
    },
  });
  const child = spawn(
    process.execPath,
    [`--inspect-wait=unix:${socketPath}`, "test", "--preload", SHARD_PRELOAD, join(root, "names.test.ts")],
    {
      cwd: root,
      stdio: "ignore",
      env: { ...process.env, SHARDGUARD_YIELD: "1", SHARDGUARD_MARKS: marks },
    },
  );
  await new Promise((resolve) => child.once("exit", resolve));
  await closed;
  server.stop(true);
  recorded = Buffer.concat(chunks);
  reads = chunks.length;
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Parses `bytes` pushed in chunks of `size` bytes; returns the frames read
 * whole as text, the streamed ones' capped texts and the lengths of those
 * over the kept bound.
 */
function parse(bytes: Buffer, size: number, limits?: FrameLimits) {
  const frames: string[] = [];
  const streamed: string[] = [];
  const oversized: number[] = [];
  let peak = 0;
  const reader = new FrameReader(
    (body) => frames.push(body.toString("utf8")),
    (text) => streamed.push(text),
    (n) => oversized.push(n),
    limits,
  );
  for (let at = 0; at < bytes.length; at += size) {
    reader.push(bytes.subarray(at, at + size));
    peak = Math.max(peak, reader.bufferedBytes);
  }
  return { frames, streamed, oversized, peak, left: reader.bufferedBytes };
}

describe("FrameReader on a real child's bytes", () => {
  test(
    "the recording holds the replies, the non-ASCII name and " +
      "the long error (the kernel split it into several reads)",
    () => {
      const { frames, left } = parse(recorded, recorded.length);
      expect(left).toBe(0);
      const messages = frames.map(
        (f) => JSON.parse(f) as { id?: number; method?: string; params?: { name?: string; message?: string } },
      );
      // The reply to 6 (the acknowledgement) may be lost as the child exits right after it.
      expect(messages.filter((m) => m.id !== undefined && m.id !== 6).map((m) => m.id)).toEqual([1, 2, 3, 4, 7, 5]);
      expect(messages.filter((m) => m.method === "TestReporter.end")).toHaveLength(2);
      const found = messages.find((m) => m.method === "TestReporter.found" && m.params?.name === NAME);
      expect(found).toBeDefined();
      const error = messages.find((m) => m.method === "LifecycleReporter.error");
      expect(error?.params?.message?.endsWith("üüEND")).toBe(true);
      expect(recorded.length).toBeGreaterThan(100 * 1024);
      expect(reads).toBeGreaterThan(1);
    },
  );

  test(
    "Bun reads our length prefix as UTF-8 bytes: a request " + "with a non-ASCII expression is answered, not refused",
    () => {
      const { frames } = parse(recorded, recorded.length);
      const reply = frames
        .map((f) => JSON.parse(f) as { id?: number; error?: unknown; result?: { result?: { value?: unknown } } })
        .find((m) => m.id === 7);
      expect(reply?.error).toBeUndefined();
      expect(reply?.result?.result?.value).toBe(NAME.length);
    },
  );

  test("Bun's length prefix counts UTF-8 bytes, not characters", () => {
    const { frames } = parse(recorded, recorded.length);
    const text = frames.find((f) => f.includes(NAME))!;
    // Find that frame's header in the raw bytes and compare.
    const body = Buffer.from(text, "utf8");
    const at = recorded.indexOf(body);
    expect(at).toBeGreaterThanOrEqual(4);
    expect(recorded.readUInt32BE(at - 4)).toBe(body.length);
    expect(body.length).toBeGreaterThan(text.length);
  });

  test("every chunk size gives the same frames: 1, 2, 3, 5 and 7 bytes, 4 KiB, one read", () => {
    const whole = parse(recorded, recorded.length).frames;
    for (const size of [1, 2, 3, 5, 7, 4096]) {
      const { frames, left } = parse(recorded, size);
      expect(left).toBe(0);
      expect(frames).toEqual(whole);
    }
  });

  test(
    "with a whole-frame bound below the long error, that frame is " +
      "streamed, never held, its strings cut, and the rest stays in step",
    () => {
      const whole = parse(recorded, recorded.length);
      expect(whole.streamed).toEqual([]);
      const big = whole.frames.find((f) => f.includes("LifecycleReporter.error"))!;
      const cap = 16 * 1024;
      const { frames, streamed, oversized, peak } = parse(recorded, 1000, { wholeBytes: cap });
      expect(oversized).toEqual([]);
      expect(streamed).toEqual([capJsonStrings(Buffer.from(big))]);
      expect(streamed[0]!).toContain("bytes cut; full text in the shard log");
      expect(frames).toEqual(whole.frames.filter((f) => f !== big));
      expect(peak).toBeLessThanOrEqual(cap + 4);
    },
  );

  test(
    "a streamed frame still over the kept bound once cut " + "is counted, not delivered, and the rest stays in step",
    () => {
      const whole = parse(recorded, recorded.length).frames;
      const big = whole.find((f) => f.includes("LifecycleReporter.error"))!;
      const { frames, streamed, oversized } = parse(recorded, 1000, { wholeBytes: 16 * 1024, maxKeptBytes: 1024 });
      expect(oversized).toEqual([Buffer.byteLength(big)]);
      expect(streamed).toEqual([]);
      expect(frames).toEqual(whole.filter((f) => f !== big));
    },
  );
});

describe("FrameReader edge cases and encodeFrame", () => {
  test("an empty frame, a header split 1+3 and several frames in one chunk", () => {
    const bytes = Buffer.concat([encodeFrame(""), encodeFrame("a"), encodeFrame("é")]);
    const got: string[] = [];
    const reader = new FrameReader(
      (body) => got.push(body.toString("utf8")),
      () => {},
      () => {},
    );
    reader.push(bytes.subarray(0, 1));
    reader.push(bytes.subarray(1, 4));
    reader.push(bytes.subarray(4));
    expect(got).toEqual(["", "a", "é"]);
    expect(reader.bufferedBytes).toBe(0);
  });

  test("encodeFrame writes the byte length big-endian", () => {
    const frame = encodeFrame('{"name":"日本"}');
    expect(frame.readUInt32BE(0)).toBe(Buffer.byteLength('{"name":"日本"}'));
    expect(frame.readUInt32BE(0)).toBe(17);
    expect(frame.subarray(4).toString("utf8")).toBe('{"name":"日本"}');
  });

  test("a negative or fractional whole-frame bound is refused", () => {
    expect(
      () =>
        new FrameReader(
          () => {},
          () => {},
          () => {},
          { wholeBytes: -1 },
        ),
    ).toThrow(RangeError);
    expect(
      () =>
        new FrameReader(
          () => {},
          () => {},
          () => {},
          { wholeBytes: 1.5 },
        ),
    ).toThrow("non-negative integer");
  });
});

describe("JsonStreamCapper: capJsonStrings for a document that arrives in pieces", () => {
  test("same result as the one-pass capper for any chunking, escapes and code points included", () => {
    const pieces = ["\\", '"', "\n", "é", "😀", "\u0001", "a", "\u2028"];
    let compared = 0;
    for (let seed = 0; seed < 120; seed++) {
      let text = "";
      for (let i = 0; i < 400; i++) text += pieces[(seed * 7 + i * ((seed % 5) + 1)) % pieces.length];
      const json = Buffer.from(JSON.stringify({ message: text, other: "kept", list: [text.slice(0, 30), 1] }));
      for (const cap of [10, 37, 64, 101]) {
        const whole = capJsonStrings(json, cap);
        for (const size of [1, 3, 17, 256, json.length]) {
          const capper = new JsonStreamCapper(cap);
          for (let at = 0; at < json.length; at += size) capper.push(json.subarray(at, at + size));
          const streamed = capper.end();
          expect(streamed).toBe(whole);
          const parsed = JSON.parse(streamed) as { other: string; message: string };
          expect(parsed.other).toBe("kept");
          compared += 1;
        }
      }
    }
    expect(compared).toBe(120 * 4 * 5);
  });

  test("a 5 MiB string keeps its tail behind the marker, every byte cut or kept", () => {
    const doc = Buffer.from(
      JSON.stringify({
        method: "LifecycleReporter.error",
        params: { message: `${"é".repeat(2_600_000)}END`, name: "Error" },
      }),
    );
    const capper = new JsonStreamCapper();
    for (let at = 0; at < doc.length; at += 65_536) capper.push(doc.subarray(at, at + 65_536));
    const out = JSON.parse(capper.end()) as { params: { message: string; name: string } };
    expect(out.params.name).toBe("Error");
    const marker = /^\[shardguard: first (\d+) bytes cut; full text in the shard log\]\n/.exec(out.params.message);
    expect(marker).not.toBeNull();
    const kept = out.params.message.slice(marker![0].length);
    // Every byte is either cut (and counted) or kept, and the kept tail is the end of the message.
    expect(Number(marker![1]) + Buffer.byteLength(kept)).toBe(Buffer.byteLength(`${"é".repeat(2_600_000)}END`));
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(64 * 1024);
    expect(kept.endsWith("éEND")).toBe(true);
  });
});
