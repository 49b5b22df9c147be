/**
 * The inspector event channel: the runner listens on a unix socket BEFORE it
 * spawns `bun test …` with `BUN_INSPECT_CONNECT_TO=unix://<socket>`, and the
 * child dials in as soon as its inspector is up (reverse connect; no polling
 * for a socket file). Bun's `connect` mode, unlike `--inspect-wait`, leaves
 * the transpiler as plain `bun test` has it (no debugger build: functions'
 * source text, `process.execArgv` unchanged; docs/bun-behaviour.md). The
 * stream is Bun's length-prefixed framing (frames.ts), reduced to the
 * per-test events shardguard needs.
 *
 * Protocol (docs/bun-behaviour.md, "Inspector test events"; request ids
 * by name in barrier.ts `REQUEST`):
 *   1. we listen; the child starts and connects a few ms after spawn, while
 *      the child preload holds the test files until step 2 releases it
 *      (a `--inspect-wait=unix:` child holds them itself);
 *   2. we write, at once, `TestReporter.enable` (`enableTests`),
 *      `LifecycleReporter.enable` (`enableLifecycle`), `Inspector.initialized`
 *      (`initialized`), the end-of-run request (`endOfRun`, below) and the
 *      release of the preload's hold (`release`, barrier.ts
 *      RELEASE_EXPRESSION). Bun handles them in order,
 *      so both domains are on before the tests are released; not waiting
 *      for the two replies saves a round trip through the runner's event
 *      loop per shard (about 12 ms under load, measured). An error reply is
 *      recorded (`requestError`): events may then be missing, which
 *      consumers already treat as "unknown";
 *   3. the child pushes `TestReporter.found|start|end` and
 *      `LifecycleReporter.error` notifications. Each message is read once:
 *      Bun's compact found, start and end from their bytes (compact.ts,
 *      to the `sink`), anything else by wire.ts `parseInspectorMessage`,
 *      whose schema is the authority (to `onEvent`);
 *   4. end-of-run barrier: `endOfRun` evaluates the promise the child
 *      preload resolves in its global afterAll (runner/child/shard-preload.ts,
 *      {@link END_OF_RUN_EXPRESSION}), `awaitEndOfRun` (in the same write, by
 *      the id Bun gives it; barrier.ts says why) awaits it. Bun sends
 *      that reply after every event queued before it, so when it arrives
 *      we have them all (`flushed`), and `onEndOfRun` releases the
 *      preload's wait (through its count file) so the child may exit. Without it a
 *      short shard lost every event now and then (Bun's sending thread had
 *      not run before the process ended; bench/event-loss.ts);
 *   5. the connection closes when the child exits. Events of a run that did
 *      not reach the barrier (a kill, `process.exit`, `--bail`) may be lost
 *      at the end, so consumers must treat missing data as "unknown", never
 *      as success (see `test-model.ts`).
 *
 * Exactly one connection is trusted: the first. The socket file is removed
 * as it is accepted, so nothing can dial after it; any other connection that
 * still arrives (one already queued) is cut at once, never read, and counted
 * (`refused`, and `onRefused`), since only the child we spawned may feed a
 * shard's verdict. The socket lives in the private directory of
 * socket-dir.ts; the file is removed when the channel closes too.
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

/**
 * Read batching: once a channel has delivered {@link BATCH_AFTER_EVENTS}
 * events, a read under {@link BATCH_READ_BYTES} pauses reading for
 * {@link BATCH_PAUSE_MS} ms, so the next read takes what gathered meanwhile
 * in the kernel's buffer. Nothing is lost by a pause: Bun delivers what the
 * peer wrote before it closed or died once reading resumes (measured). Off
 * with the per-file barriers of `--bail`, where the child waits for the
 * runner's reply before each file's first test.
 */
const BATCH_AFTER_EVENTS = 1_000;
const BATCH_READ_BYTES = 32 * 1024;
const BATCH_PAUSE_MS = 2;

/** What a connection carries: whether it is the trusted one. */
interface ConnectionData {
  trusted: boolean;
}

/** Where the channel is: listening for the dial, handshake written, handshake failed. */
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
 * Listens on `socketPath` for the one connection of a
 * shard child (`BUN_INSPECT_CONNECT_TO=unix://<socketPath>`, or
 * `--inspect-wait=unix:<socketPath>`); when it dials, enables the
 * `TestReporter` and `LifecycleReporter` domains, releases the child
 * (`Inspector.initialized`, and the preload's hold) and sets up the end-of-run barrier
 * (see the module comment), then streams validated events to `onEvent`
 * until the connection closes. Spawn the child after this returns.
 *
 * Every JSON string of a message is cut to its last 64 KiB on the way in
 * (util/text-cap.ts); frames over 1 MiB are never held whole (streamed
 * through util/json-stream-cap.ts, whatever their length: a 40 MiB test
 * name is read and cut); a frame still over frames.ts MAX_KEPT_BYTES after
 * the cuts is dropped and counted (`oversized`). Messages that are not JSON are counted
 * (`malformed`), unknown methods ignored, invalid events counted; none of
 * these throw.
 *
 * @throws InspectorConnectError `invalid-path` when the path is not
 *   absolute or has characters outside `A-Z a-z 0-9 . _ / -`; `listen` when
 *   the socket cannot be created (e.g. something exists at the path).
 */
export function listenForTestEvents(options: ListenOptions): EventChannel {
  return new InspectorChannel(options);
}

/**
 * The channel of {@link listenForTestEvents}: one listening socket, at most
 * one trusted connection, one reader of its messages.
 */
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
  /** Set while reading is paused so messages gather (see {@link batchReads}). */
  private resumeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Bytes the kernel did not take yet (tiny: a few requests), written on drain. */
  private unsent: Buffer | null = null;
  /** Bun gave the end-of-run promise another id than the handshake's awaitPromise named. */
  private renumbered = false;

  constructor(private readonly options: ListenOptions) {
    const { socketPath } = options;
    if (!isAbsolute(socketPath) || !SAFE_SOCKET_PATH.test(socketPath)) {
      throw new InspectorConnectError(
        `inspector socket path must be absolute and use only A-Z a-z 0-9 . _ / - (see socketPathFor): ${JSON.stringify(socketPath)}`,
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

  /** A snapshot of the counters. */
  stats(): ChannelStats {
    return { ...this.counters };
  }

  /** Cuts the connection, stops listening, removes the socket file; idempotent. */
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

  /** Creates the listening socket; its handlers are this class's `on…` methods. */
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
        `could not listen on inspector socket ${this.options.socketPath}: ${error instanceof Error ? error.message : String(error)}`,
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
    // The path is the child's only: unlinked now, later dials find nothing
    // (ENOENT). The test's own `bun` children inherit BUN_INSPECT_CONNECT_TO
    // (Bun.spawn's default environment is the starting one, whatever the
    // preload deletes); in Bun's connect mode a failed dial just runs on.
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

  /**
   * A busy stream read as it trickles in costs ~10 µs per read (one per
   * 1–8 messages, bench/README.md): past {@link BATCH_AFTER_EVENTS} events a
   * short read pauses reading for a moment so the next takes what gathered.
   * Not under --bail: there the child waits for the runner before each file.
   */
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

  /** One whole frame of at most 1 MiB: Bun's compact form straight from its bytes, else the parser. */
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

  /** Runs a caller's hook; an exception is counted (`handlerErrors`), never thrown into the socket's loop. */
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

/**
 * Removes the socket file; never throws: its directory may be gone or no
 * directory any more (a test removed or replaced the output directory),
 * and then there is no file left to find either.
 */
function removeSocketFile(socketPath: string): void {
  try {
    rmSync(socketPath, { force: true });
  } catch {
    // Nothing there to bind to or dial.
  }
}
