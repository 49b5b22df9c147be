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
 * Protocol (docs/bun-behaviour.md, "Inspector test events"):
 *   1. we listen; the child starts and connects a few ms after spawn, while
 *      the child preload holds the test files until step 2 releases it
 *      (a `--inspect-wait=unix:` child holds them itself);
 *   2. we write, at once, `TestReporter.enable` (id 1),
 *      `LifecycleReporter.enable` (id 2), `Inspector.initialized` (id 3),
 *      the end-of-run request (id 4, below) and the release of the
 *      preload's hold (id 7, barrier.ts RELEASE_EXPRESSION). Bun handles them in order,
 *      so both domains are on before the tests are released; not waiting
 *      for the two replies saves a round trip through the runner's event
 *      loop per shard (about 12 ms under load, measured). An error reply is
 *      recorded (`requestError`): events may then be missing, which
 *      consumers already treat as "unknown";
 *   3. the child pushes `TestReporter.found|start|end` and
 *      `LifecycleReporter.error` notifications;
 *   4. end-of-run barrier: request 4 evaluates the promise the child
 *      preload resolves in its global afterAll (runner/child/shard-preload.ts,
 *      {@link END_OF_RUN_EXPRESSION}), request 5 awaits it. Bun sends the
 *      reply to 5 after every event queued before it, so when it arrives
 *      we have them all (`flushed`), and request 6 resolves the preload's
 *      wait ({@link ACK_EXPRESSION}) so the child may exit. Without it a
 *      short shard lost every event now and then (Bun's sending thread had
 *      not run before the process ended; bench/event-loss.ts);
 *   5. the connection closes when the child exits. Events of a run that did
 *      not reach the barrier (a kill, `process.exit`, `--bail`) may be lost
 *      at the end, so consumers must treat missing data as "unknown", never
 *      as success (see `model.ts`).
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
import { encodeFrame, FrameReader, MAX_FRAME_BYTES, WHOLE_FRAME_BYTES } from "./frames.ts";
import { SAFE_SOCKET_PATH } from "./socket-dir.ts";
import { CompactReader, type CompactSink } from "./compact.ts";
import { InspectorConnectError, type ChannelStats, type EventChannel } from "./channel.ts";
import { END_OF_RUN_EXPRESSION, fileBarrierRequest, barrierRequestsAfter, RELEASE_EXPRESSION, RELEASE_ID } from "./barrier.ts";
import { classifyInspectorMessage, parseStartOrEnd, type TestEvent } from "./wire.ts";

export { ACK_EXPRESSION, END_OF_RUN_EXPRESSION, FILE_BARRIER_FIRST_ID, firstTestExpression, planAckExpression, RELEASE_EXPRESSION } from "./barrier.ts";
export { channelNotes, InspectorConnectError, type ChannelStats, type EventChannel } from "./channel.ts";

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

/** Options of {@link listenForTestEvents}. */
export interface ListenOptions {
  /**
   * Absolute path of the unix socket to listen on, from `socketPathFor`
   * (nothing may exist there yet); the child gets `BUN_INSPECT_CONNECT_TO=unix://<it>`
   * (exec/command.ts `inspectorEnv`; `--inspect-wait=unix:<it>` dials it too).
   */
  socketPath: string;
  /**
   * Budget in ms, counted from the call, for the child to dial in. Spawn
   * the child right after.
   */
  connectTimeoutMs: number;
  /**
   * Called synchronously for every valid event, in arrival order. An
   * exception thrown here is caught and counted (`handlerErrors`), never
   * propagated into the socket's event loop. `message`: the message as
   * received (capped; bytes valid only during the call) when it encodes
   * `event` as it is (hand-checked events), else undefined.
   */
  onEvent: (event: TestEvent, message: string | Uint8Array | undefined) => void;
  /**
   * Optional: gets the found, start and end messages in Bun's compact form
   * field by field (compact.ts), without an event object, instead of
   * `onEvent`; every other event still goes to `onEvent`, all in arrival
   * order. Exceptions are caught and counted like `onEvent`'s.
   */
  sink?: CompactSink;
  /**
   * Optional: called once per read from the socket, before the messages it
   * completed are delivered (e.g. to take one clock reading for all of them:
   * they arrived together).
   */
  onRead?: () => void;
  /** Called once per refused connection, with a one-line description. */
  onRefused?: (detail: string) => void;
  /**
   * Also hold the first test until the runner has every event sent before it
   * (the per-file barriers of {@link firstTestExpression}): set under `--bail`, where
   * Bun ends without the end-of-run barrier and a fast file could lose its
   * `found` plan. The child preload takes part when SHARDGUARD_YIELD=bail.
   */
  firstTestBarrier?: boolean;
  /**
   * Called once, synchronously, when the end-of-run barrier's reply arrives
   * and before request 6 releases the child: the child preload is then
   * waiting in its global afterAll, every test over, so the caller sees the
   * child's process tree as the run ended (exec/shard.ts lists its
   * descendants here instead of the preload, bench/README.md). An exception
   * thrown here is counted (`handlerErrors`); the child is released anyway.
   */
  onEndOfRun?: () => void;
  /** Aborting rejects a pending handshake and closes an open channel. */
  signal?: AbortSignal;
}

/** What a connection carries: whether it is the trusted one. */
interface ConnectionData {
  trusted: boolean;
}

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
  const { socketPath, connectTimeoutMs, onEvent, onRefused, onRead, signal, firstTestBarrier = false, onEndOfRun } = options;
  const compact = options.sink ? new CompactReader(options.sink) : null;
  const started = performance.now();
  if (!isAbsolute(socketPath) || !SAFE_SOCKET_PATH.test(socketPath)) {
    throw new InspectorConnectError(
      `inspector socket path must be absolute and use only A-Z a-z 0-9 . _ / - (see socketPathFor): ${JSON.stringify(socketPath)}`,
      socketPath,
      0,
      "invalid-path",
    );
  }
  const waited = () => Math.round(performance.now() - started);
  const fail = (reason: InspectorConnectError["reason"], detail: string) =>
    new InspectorConnectError(
      `inspector handshake on ${socketPath} failed after ${waited()} ms (timeout ${connectTimeoutMs} ms): ${detail}`,
      socketPath,
      waited(),
      reason,
    );

  const stats: ChannelStats = {
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
  };
  let resolveReady!: () => void;
  let rejectReady!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  // A rejection nobody awaits must not become an unhandled one.
  ready.catch(() => {});
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });

  let handshake: "waiting" | "done" | "failed" = "waiting";
  let isClosed = false;
  let trusted: Socket<ConnectionData> | null = null;
  /** Set while reading is paused so messages gather (see `data`). */
  let resumeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Bytes the kernel did not take yet (tiny: three requests), written on drain. */
  let unsent: Buffer | null = null;

  const send = (socket: Socket<ConnectionData>, ...messages: object[]) => {
    const frame = Buffer.concat(messages.map((m) => encodeFrame(JSON.stringify(m))));
    const queued = unsent ? Buffer.concat([unsent, frame]) : frame;
    const written = socket.write(queued);
    unsent = written < queued.length ? queued.subarray(Math.max(0, written)) : null;
  };

  const failHandshake = (error: InspectorConnectError) => {
    if (handshake === "done" || handshake === "failed") return;
    handshake = "failed";
    rejectReady(error);
    close();
  };

  const deliver = (event: TestEvent, message: string | Uint8Array | undefined) => {
    stats.events += 1;
    try {
      onEvent(event, message);
    } catch {
      stats.handlerErrors += 1;
    }
  };
  const onMessage = (body: Buffer | string) => {
    if (typeof body !== "string") {
      if (compact !== null) {
        let read: boolean;
        try {
          read = compact.read(body);
        } catch {
          // Only a sink throws here, after the message was read whole.
          read = true;
          stats.handlerErrors += 1;
        }
        if (read) {
          stats.events += 1;
          return;
        }
      } else {
        const common = parseStartOrEnd(body);
        if (common !== null) return deliver(common, body);
      }
    }
    const text = typeof body === "string" ? body : capJsonStrings(body);
    const parsed = classifyInspectorMessage(text);
    switch (parsed.kind) {
      case "raw-event":
      case "event":
        deliver(parsed.event, parsed.kind === "raw-event" ? text : undefined);
        break;
      case "response":
        if (parsed.error !== undefined) {
          stats.requestError ??= `request ${parsed.id} was refused: ${parsed.error}`;
          break;
        }
        if (trusted === null || isClosed) break;
        if (parsed.id === 5) {
          stats.flushed = true;
          try {
            onEndOfRun?.();
          } catch {
            stats.handlerErrors += 1;
          }
        }
        {
          const next = barrierRequestsAfter(parsed.id, parsed.objectId, firstTestBarrier);
          if (next.length > 0) send(trusted, ...next);
        }
        break;
      case "ignored":
        stats.ignored += 1;
        break;
      case "invalid":
        stats.invalid += 1;
        stats.firstInvalid ??= `${parsed.method}: ${parsed.issue}`;
        break;
      case "malformed":
        stats.malformed += 1;
        break;
    }
  };
  const reader = new FrameReader(
    onMessage,
    () => {
      stats.oversized += 1;
    },
    MAX_FRAME_BYTES,
    { aboveBytes: WHOLE_FRAME_BYTES, onText: onMessage },
  );

  const refuse = (socket: Socket<ConnectionData>) => {
    socket.data = { trusted: false };
    socket.terminate();
    stats.refused += 1;
    const when = stats.closedBy !== null ? "after the first one closed" : "while the first one was open";
    try {
      onRefused?.(`refused a connection to the inspector socket ${socketPath} ${when} (only the first is trusted)`);
    } catch {
      // A reporting hook must not break the channel.
    }
  };

  let server: UnixSocketListener<ConnectionData>;
  try {
    server = Bun.listen<ConnectionData>({
      unix: socketPath,
      socket: {
        open(socket) {
          if (trusted !== null || isClosed) {
            refuse(socket);
            return;
          }
          socket.data = { trusted: true };
          trusted = socket;
          // The path is the child's only: unlinked now, later dials find nothing
          // (ENOENT). The test's own `bun` children inherit BUN_INSPECT_CONNECT_TO
          // (Bun.spawn's default environment is the starting one, whatever the
          // preload deletes); in Bun's connect mode a failed dial just runs on.
          rmSync(socketPath, { force: true });
          stats.dialMs = Math.round((performance.now() - started) * 10) / 10;
          send(
            socket,
            { id: 1, method: "TestReporter.enable" },
            { id: 2, method: "LifecycleReporter.enable" },
            { id: 3, method: "Inspector.initialized" },
            { id: 4, method: "Runtime.evaluate", params: { expression: END_OF_RUN_EXPRESSION } },
            { id: RELEASE_ID, method: "Runtime.evaluate", params: { expression: RELEASE_EXPRESSION } },
            ...(firstTestBarrier ? [fileBarrierRequest(0)] : []),
          );
          handshake = "done";
          stats.connectMs = Math.round((performance.now() - started) * 10) / 10;
          clearTimeout(timer);
          resolveReady();
        },
        data(socket, chunk) {
          if (socket !== trusted || isClosed) return;
          if (onRead) {
            try {
              onRead();
            } catch {
              stats.handlerErrors += 1;
            }
          }
          reader.push(chunk);
          // A busy stream read as it trickles in costs ~10 µs per read (one
          // per 1–8 messages, bench/README.md): let it gather for a moment.
          // Not under --bail: there the child waits for the runner before each file.
          if (!firstTestBarrier && chunk.length < BATCH_READ_BYTES && stats.events >= BATCH_AFTER_EVENTS && resumeTimer === undefined && !isClosed) {
            socket.pause();
            stats.readPauses += 1;
            resumeTimer = setTimeout(() => {
              resumeTimer = undefined;
              if (!isClosed) socket.resume();
            }, BATCH_PAUSE_MS);
          }
        },
        drain(socket) {
          if (socket !== trusted || unsent === null) return;
          const pending = unsent;
          unsent = null;
          const written = socket.write(pending);
          if (written < pending.length) unsent = pending.subarray(Math.max(0, written));
        },
        close(socket) {
          if (socket !== trusted) return;
          if (stats.closedBy === null) stats.closedBy = "peer";
          resolveClosed();
        },
        error() {
          // A transport error is followed by 'close'; that is where we react.
        },
      },
    });
  } catch (error) {
    throw new InspectorConnectError(
      `could not listen on inspector socket ${socketPath}: ${error instanceof Error ? error.message : String(error)}`,
      socketPath,
      waited(),
      "listen",
    );
  }

  function close(): void {
    if (isClosed) return;
    isClosed = true;
    clearTimeout(timer);
    clearTimeout(resumeTimer);
    signal?.removeEventListener("abort", onAbort);
    if (trusted !== null && stats.closedBy === null) stats.closedBy = "local";
    try {
      trusted?.terminate();
    } catch {
      // already closed
    }
    try {
      server.stop(true);
    } catch {
      // already stopped
    }
    // No leftover file: the next child on this path could not bind, nor could we.
    rmSync(socketPath, { force: true });
    failHandshake(fail("aborted", "the channel was closed before the handshake completed"));
    resolveClosed();
  }

  const onAbort = () => {
    if (handshake === "done") close();
    else failHandshake(fail("aborted", "aborted by the caller"));
  };
  // The handshake is written as the child connects, so only the dial can time out.
  const timer = setTimeout(() => failHandshake(fail("timeout", "the child never connected (its inspector did not start?)")), Math.max(0, connectTimeoutMs));
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();

  return { ready, closed, close, stats: () => ({ ...stats }) };
}
