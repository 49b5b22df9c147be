/**
 * The inspector event channel: the runner listens on a unix socket before it spawns `bun test` with
 * `BUN_INSPECT_CONNECT_TO=unix://<socket>`, and the child dials in (reverse connect, which unlike `--inspect-wait`
 * leaves the transpiler as plain `bun test` has it). Protocol (docs/bun-behaviour.md, "Inspector test events";
 * request ids in barrier.ts `REQUEST`):
 *   1. we listen; the child dials in while its preload holds the test files;
 *   2. we write the enables, `Inspector.initialized`, the end-of-run barrier and the release at once: Bun handles
 *      them in order, and not awaiting each reply saves a round trip per shard;
 *   3. the child pushes found/start/end (read from their bytes, compact.ts) and errors (wire.ts's schema);
 *   4. the end-of-run barrier's reply follows every event queued before it (`flushed`); `onEndOfRun` then
 *      releases the preload, without which short shards lost events (bench/event-loss.ts);
 *   5. the child exits. A run that missed the barrier may lose its last events: missing data is "unknown".
 * Only the first connection is trusted; the socket file goes as it is accepted, later ones are cut unread.
 */
import { rmSync } from "node:fs";
import { isAbsolute } from "node:path";
import type { Socket, UnixSocketListener } from "bun";
import { capJsonStrings } from "../util/text-cap.ts";
import { encodeFrame, FrameReader } from "./frames.ts";
import { SAFE_SOCKET_PATH } from "./socket-dir.ts";
import { CompactReader } from "./compact.ts";
import { InspectorConnectError, type ChannelStats, type EventChannel, type ListenOptions } from "./channel.ts";
import {
  barrierRequestsAfter,
  END_OF_RUN_OBJECT_ID,
  handshakeRequests,
  REQUEST,
  type BarrierRequest,
} from "./barrier.ts";
import { parseInspectorMessage } from "./wire.ts";

export {
  END_OF_RUN_EXPRESSION,
  FILE_BARRIER_FIRST_ID,
  firstTestExpression,
  planAckExpression,
  RELEASE_EXPRESSION,
  REQUEST,
} from "./barrier.ts";
export {
  channelNotes,
  InspectorConnectError,
  type ChannelStats,
  type EventChannel,
  type ListenOptions,
} from "./channel.ts";
export type { CompactSink } from "./compact.ts";

// Read batching: past BATCH_AFTER_EVENTS events a short read pauses reading so the next takes what gathered (Bun
// still delivers what a peer wrote before closing). Off under `--bail`, whose child waits for each file's barrier.
const BATCH_AFTER_EVENTS = 1_000;
const BATCH_READ_BYTES = 32 * 1024;
const BATCH_PAUSE_MS = 2;

interface ConnectionData {
  trusted: boolean;
}

type Handshake = "waiting" | "done" | "failed";

const freshStats = (): ChannelStats => ({
  dialMs: null,
  connectMs: 0,
  flushed: false,
  requestError: null,
  events: 0,
  malformed: 0,
  invalid: 0,
  firstInvalid: null,
  ignored: 0,
  oversized: 0,
  handlerErrors: 0,
  readPauses: 0,
  refused: 0,
  closedBy: null,
});

/**
 * Listens on `socketPath` for a shard child's one connection; when it dials, writes the handshake (module comment)
 * and streams events to `onEvent` and the sink until it closes. Spawn the child after this returns. Strings are cut
 * to their tails and huge frames streamed (frames.ts); bad or unknown messages are counted, never thrown.
 * @throws InspectorConnectError `invalid-path` (not absolute, or unsafe characters) or `listen` (cannot bind)
 */
export function listenForTestEvents(options: ListenOptions): EventChannel {
  return new InspectorChannel(options);
}

/** The channel of {@link listenForTestEvents}: one listener, at most one trusted connection. */
class InspectorChannel implements EventChannel {
  readonly ready: Promise<void>;
  readonly closed: Promise<void>;
  private readonly counters = freshStats();
  private readonly started = performance.now();
  private readonly readyGate = Promise.withResolvers<void>();
  private readonly closedGate = Promise.withResolvers<void>();
  private readonly frames: FrameReader;
  private readonly compact: CompactReader;
  private readonly server: UnixSocketListener<ConnectionData>;
  private readonly connectTimer: ReturnType<typeof setTimeout>;
  private handshake: Handshake = "waiting";
  private isClosed = false;
  private trusted: Socket<ConnectionData> | null = null;
  private resumeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Bytes the kernel did not take yet (tiny: a few requests), written on drain. */
  private unsent: Buffer | null = null;
  /** Bytes the kernel did not take yet, written on drain. */
  private renumbered = false;

  constructor(private readonly options: ListenOptions) {
    const { socketPath } = options;
    if (!isAbsolute(socketPath) || !SAFE_SOCKET_PATH.test(socketPath)) {
      throw new InspectorConnectError(
        `inspector socket path must be absolute and use only A-Z a-z 0-9 . _ / - (see socketPathFor): ` +
          `${JSON.stringify(socketPath)}`,
        socketPath,
        0,
        "invalid-path",
      );
    }
    this.ready = this.readyGate.promise;
    // A rejection nobody awaits must not become an unhandled one.
    this.ready.catch(() => {});
    this.closed = this.closedGate.promise;
    this.compact = new CompactReader(options.sink);
    this.frames = new FrameReader(
      (body) => this.onFrame(body),
      (text) => this.onText(text),
      () => {
        this.counters.oversized += 1;
      },
    );
    this.server = this.listen();
    this.close = this.close.bind(this);
    // The handshake is written as the child connects, so only the dial can time out.
    this.connectTimer = setTimeout(
      () => this.failHandshake("timeout", "the child never connected (its inspector did not start?)"),
      Math.max(0, options.connectTimeoutMs),
    );
    options.signal?.addEventListener("abort", this.onAbort, { once: true });
    if (options.signal?.aborted) this.onAbort();
  }

  stats(): ChannelStats {
    return { ...this.counters };
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.resumeTimer);
    this.options.signal?.removeEventListener("abort", this.onAbort);
    if (this.trusted !== null && this.counters.closedBy === null) this.counters.closedBy = "local";
    try {
      this.trusted?.terminate();
    } catch {
      // already closed
    }
    try {
      this.server.stop(true);
    } catch {
      // already stopped
    }
    // No leftover file: the next child on this path could not bind, nor could we.
    removeSocketFile(this.options.socketPath);
    this.failHandshake("aborted", "the channel was closed before the handshake completed");
    this.closedGate.resolve();
  }

  private readonly onAbort = (): void => {
    if (this.handshake === "done") this.close();
    else this.failHandshake("aborted", "aborted by the caller");
  };

  private listen(): UnixSocketListener<ConnectionData> {
    try {
      return Bun.listen<ConnectionData>({
        unix: this.options.socketPath,
        socket: {
          open: (socket) => this.onOpen(socket),
          data: (socket, chunk) => this.onData(socket, chunk),
          drain: (socket) => this.onDrain(socket),
          close: (socket) => this.onClose(socket),
          error() {
            // A transport error is followed by 'close'; that is where we react.
          },
        },
      });
    } catch (error) {
      throw new InspectorConnectError(
        `could not listen on inspector socket ${this.options.socketPath}: ` +
          `${error instanceof Error ? error.message : String(error)}`,
        this.options.socketPath,
        this.waited(),
        "listen",
      );
    }
  }

  /** The first connection is the child's: trust it, unlink the path, write the handshake. */
  private onOpen(socket: Socket<ConnectionData>): void {
    if (this.trusted !== null || this.isClosed) {
      this.refuse(socket);
      return;
    }
    socket.data = { trusted: true };
    this.trusted = socket;
    // Unlinked now, later dials find nothing: the test's own `bun` children inherit BUN_INSPECT_CONNECT_TO, and in
    // connect mode a failed dial just runs on.
    removeSocketFile(this.options.socketPath);
    this.counters.dialMs = this.sinceStart();
    this.send(handshakeRequests(this.options.firstTestBarrier ?? false));
    this.handshake = "done";
    this.counters.connectMs = this.sinceStart();
    clearTimeout(this.connectTimer);
    this.readyGate.resolve();
  }

  private onData(socket: Socket<ConnectionData>, chunk: Buffer): void {
    if (socket !== this.trusted || this.isClosed) return;
    if (this.options.onRead) this.guard(this.options.onRead);
    this.frames.push(chunk);
    this.batchReads(socket, chunk.length);
  }

  /** See BATCH_AFTER_EVENTS: a busy stream costs per read (bench/README.md, "Where the time goes"). */
  private batchReads(socket: Socket<ConnectionData>, readBytes: number): void {
    if (this.options.firstTestBarrier || readBytes >= BATCH_READ_BYTES || this.counters.events < BATCH_AFTER_EVENTS)
      return;
    if (this.resumeTimer !== undefined || this.isClosed) return;
    socket.pause();
    this.counters.readPauses += 1;
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      if (!this.isClosed) socket.resume();
    }, BATCH_PAUSE_MS);
  }

  private onDrain(socket: Socket<ConnectionData>): void {
    if (socket !== this.trusted || this.unsent === null) return;
    const pending = this.unsent;
    this.unsent = null;
    this.write(socket, pending);
  }

  private onClose(socket: Socket<ConnectionData>): void {
    if (socket !== this.trusted) return;
    if (this.counters.closedBy === null) this.counters.closedBy = "peer";
    this.closedGate.resolve();
  }

  /** One whole frame: Bun's compact form straight from its bytes, else the parser. */
  private onFrame(body: Buffer): void {
    let read: boolean;
    try {
      read = this.compact.read(body);
    } catch {
      // Only the sink throws here, after the message was read whole.
      read = true;
      this.counters.handlerErrors += 1;
    }
    if (read) this.counters.events += 1;
    else this.onText(capJsonStrings(body));
  }

  /** One message as text, its strings cut to their tails: the schema decides what it is. */
  private onText(text: string): void {
    const parsed = parseInspectorMessage(text);
    switch (parsed.kind) {
      case "event":
        this.counters.events += 1;
        this.guard(() => this.options.onEvent(parsed.event, undefined));
        break;
      case "response":
        this.onResponse(parsed.id, parsed.error, parsed.objectId);
        break;
      case "ignored":
        this.counters.ignored += 1;
        break;
      case "invalid":
        this.counters.invalid += 1;
        this.counters.firstInvalid ??= `${parsed.method}: ${parsed.issue}`;
        break;
      case "malformed":
        this.counters.malformed += 1;
        break;
    }
  }

  /** A reply to request `id`: an error is recorded; a barrier's reply sends its next requests. */
  private onResponse(id: number, error: string | undefined, objectId: string | undefined): void {
    if (id === REQUEST.endOfRun && objectId !== undefined) this.renumbered = objectId !== END_OF_RUN_OBJECT_ID;
    // The handshake's awaitPromise named another object: awaitEndOfRunById answers instead.
    if (id === REQUEST.awaitEndOfRun && this.renumbered) return;
    if (error !== undefined) {
      this.counters.requestError ??= `request ${id} was refused: ${error}`;
      return;
    }
    if (this.trusted === null || this.isClosed) return;
    if (id === REQUEST.awaitEndOfRun || id === REQUEST.awaitEndOfRunById) {
      this.counters.flushed = true;
      if (this.options.onEndOfRun) this.guard(this.options.onEndOfRun);
    }
    const next = barrierRequestsAfter(id, objectId, this.options.firstTestBarrier ?? false);
    if (next.length > 0) this.send(next);
  }

  /** Writes `requests` as frames to the trusted socket, after anything still unsent. */
  private send(requests: readonly BarrierRequest[]): void {
    const frame = Buffer.concat(requests.map((request) => encodeFrame(JSON.stringify(request))));
    const queued = this.unsent ? Buffer.concat([this.unsent, frame]) : frame;
    this.write(this.trusted!, queued);
  }

  private write(socket: Socket<ConnectionData>, bytes: Buffer): void {
    const written = socket.write(bytes);
    this.unsent = written < bytes.length ? bytes.subarray(Math.max(0, written)) : null;
  }

  /** Any connection after the first: cut unread, counted, reported. */
  private refuse(socket: Socket<ConnectionData>): void {
    socket.data = { trusted: false };
    socket.terminate();
    this.counters.refused += 1;
    const when = this.counters.closedBy !== null ? "after the first one closed" : "while the first one was open";
    try {
      this.options.onRefused?.(
        `refused a connection to the inspector socket ${this.options.socketPath} ${when} (only the first is trusted)`,
      );
    } catch {
      // A reporting hook must not break the channel.
    }
  }

  private failHandshake(reason: InspectorConnectError["reason"], detail: string): void {
    if (this.handshake !== "waiting") return;
    this.handshake = "failed";
    const { socketPath, connectTimeoutMs } = this.options;
    const waited = this.waited();
    this.readyGate.reject(
      new InspectorConnectError(
        `inspector handshake on ${socketPath} failed after ${waited} ms (timeout ${connectTimeoutMs} ms): ${detail}`,
        socketPath,
        waited,
        reason,
      ),
    );
    this.close();
  }

  private guard(hook: () => void): void {
    try {
      hook();
    } catch {
      this.counters.handlerErrors += 1;
    }
  }

  private waited(): number {
    return Math.round(performance.now() - this.started);
  }

  /** ms since the call, one decimal. */
  private sinceStart(): number {
    return Math.round((performance.now() - this.started) * 10) / 10;
  }
}

/** Removes the socket file; never throws (a test may have removed its directory, and the file with it). */
function removeSocketFile(socketPath: string): void {
  try {
    rmSync(socketPath, { force: true });
  } catch {
    // Nothing there to bind to or dial.
  }
}
