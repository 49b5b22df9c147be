/**
 * The inspector event channel: a client for the WebSocket that a
 * `bun --inspect-wait=ws+unix://<socket> test …` child serves on a unix
 * socket, reduced to the per-test events shardguard needs.
 *
 * Protocol (docs/bun-behaviour.md, "Inspector test events"):
 *   1. the child creates the socket file a few ms after spawn and waits;
 *   2. we send `TestReporter.enable` (id 1) and `LifecycleReporter.enable`
 *      (id 2) and wait for their `{"result":{},"id":N}` replies;
 *   3. we send `Inspector.initialized` (id 3) and the tests start;
 *   4. the child pushes `TestReporter.found|start|end` and
 *      `LifecycleReporter.error` notifications;
 *   5. the socket closes (code 1006) when the child exits. The last events
 *      of a run may be lost, so consumers must treat missing data as
 *      "unknown", never as success (see `model.ts`).
 *
 * The wire format is wire.ts; where sockets live is socket-dir.ts.
 */
import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import WebSocket from "ws";
import { capJsonStrings, MAX_TEXT_BYTES } from "../util/text-cap.ts";
import { SAFE_SOCKET_PATH } from "./socket-dir.ts";
import { parseInspectorMessage, type TestEvent } from "./wire.ts";

/** Options of {@link connectTestEvents}. */
export interface ConnectOptions {
  /** Absolute path of the unix socket given to `--inspect-wait=ws+unix://…`. */
  socketPath: string;
  /**
   * Budget in ms for the whole handshake: waiting for the socket file,
   * connecting (retried), and both `*.enable` replies.
   */
  connectTimeoutMs: number;
  /**
   * Called synchronously for every valid event, in arrival order. An
   * exception thrown here is caught and counted (`handlerErrors`), never
   * propagated into the socket's event loop.
   */
  onEvent: (event: TestEvent) => void;
  /** Aborting rejects a pending connect and closes an open channel. */
  signal?: AbortSignal;
}

/** Counters of one channel, for diagnostics and the report's reason lines. */
export interface ChannelStats {
  /** ms from the call to {@link connectTestEvents} to the `Inspector.initialized` send. */
  connectMs: number;
  /** Valid events delivered to `onEvent`. */
  events: number;
  /** Messages that were not JSON objects. */
  malformed: number;
  /** Known methods whose params failed schema validation (dropped). */
  invalid: number;
  /** Messages with methods we do not consume (dropped). */
  ignored: number;
  /** Exceptions thrown by `onEvent` (caught). */
  handlerErrors: number;
  /** WebSocket close code once closed (1006 when the child exited), else null. */
  closeCode: number | null;
}

/** An open event channel returned by {@link connectTestEvents}. */
export interface EventChannel {
  /**
   * Resolves when the socket has closed, for whatever reason (child exit,
   * {@link EventChannel.close}, abort). Never rejects. All events have been
   * delivered to `onEvent` by then.
   */
  readonly closed: Promise<void>;
  /** Closes the socket immediately. Idempotent; `closed` then resolves. */
  close(): void;
  /** A snapshot of the counters. */
  stats(): ChannelStats;
}

/**
 * Thrown (as a rejection) by {@link connectTestEvents} when the handshake
 * did not complete within `connectTimeoutMs`, the child refused a request,
 * the socket closed during the handshake, the signal aborted, or the socket
 * path was unusable. The caller treats it as "per-test data missing" for
 * the shard (and should stop the child: with `--inspect-wait` it waits for a
 * debugger forever).
 */
export class InspectorConnectError extends Error {
  override readonly name = "InspectorConnectError";
  constructor(
    message: string,
    readonly socketPath: string,
    /** ms spent before giving up. */
    readonly waitedMs: number,
    /**
     * Why: `timeout`; `refused` (a JSON-RPC error reply); `closed` (the
     * socket closed during the handshake, e.g. the child exited); `aborted`;
     * `invalid-path` (not absolute, or unsafe characters: nothing was tried).
     */
    readonly reason: "timeout" | "refused" | "closed" | "aborted" | "invalid-path",
  ) {
    super(message);
  }
}

/** Pause between connection attempts while the child has not bound the socket yet. */
const RETRY_INTERVAL_MS = 2;

/**
 * A message as text, every string in it cut to its last 64 KiB on the way
 * in (a test's error message can be any size; the full text is in the log).
 */
function rawToText(data: WebSocket.RawData | string): string {
  if (typeof data === "string") return data.length <= MAX_TEXT_BYTES ? data : capJsonStrings(Buffer.from(data, "utf8"));
  if (Array.isArray(data)) return capJsonStrings(Buffer.concat(data));
  if (data instanceof ArrayBuffer) return capJsonStrings(Buffer.from(data));
  return capJsonStrings(data);
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * One connection attempt, bounded by `remainingMs`. Resolves with the open
 * socket, or rejects with the transport error (ENOENT, ECONNREFUSED, …).
 */
function openOnce(url: string, remainingMs: number, signal: AbortSignal | undefined): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    let settled = false;
    const finish = (error: Error | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      ws.off("open", onOpen);
      ws.off("close", onClose);
      if (error) {
        ws.off("error", onError);
        // Keep a no-op listener: a late 'error' without one would throw.
        ws.on("error", () => {});
        try {
          ws.terminate();
        } catch {
          // already closed
        }
        reject(error);
      } else {
        // Swap in a no-op until the caller attaches its own 'error' listener.
        ws.off("error", onError);
        ws.on("error", () => {});
        resolve(ws);
      }
    };
    const onOpen = () => finish(undefined);
    const onError = (error: Error) => finish(error);
    const onClose = (code: number) => finish(new Error(`closed with code ${code} before opening`));
    const onAbort = () => finish(new Error("aborted"));
    const timer = setTimeout(() => finish(new Error("attempt timed out")), Math.max(1, remainingMs));
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.on("open", onOpen);
    ws.on("error", onError);
    ws.on("close", onClose);
  });
}

/**
 * Connects to a `bun --inspect-wait=ws+unix://<socketPath> test …` child,
 * enables the `TestReporter` and `LifecycleReporter` domains, releases the
 * child with `Inspector.initialized`, and streams validated events to
 * `onEvent` until the socket closes.
 *
 * Waiting: the socket file appears a few ms after spawn, and can exist a
 * moment before the child listens (ECONNREFUSED), so the connection is
 * retried every few ms until `connectTimeoutMs` has passed. The same overall
 * deadline bounds the `*.enable` replies. Never hangs past the deadline.
 *
 * Messages that are not JSON are counted (`malformed`), events with unknown
 * methods are ignored, events that fail validation are counted (`invalid`);
 * none of these throw.
 *
 * @throws InspectorConnectError (as a rejection) naming the socket and the
 *   ms waited, when the handshake did not complete.
 */
export async function connectTestEvents(options: ConnectOptions): Promise<EventChannel> {
  const { socketPath, connectTimeoutMs, onEvent, signal } = options;
  const started = performance.now();
  const deadline = started + connectTimeoutMs;
  if (!isAbsolute(socketPath) || !SAFE_SOCKET_PATH.test(socketPath)) {
    throw new InspectorConnectError(
      `inspector socket path must be absolute and use only A-Z a-z 0-9 . _ / - (see socketPathFor): ${JSON.stringify(socketPath)}`,
      socketPath,
      0,
      "invalid-path",
    );
  }
  const url = `ws+unix://${socketPath}`;
  const waited = () => Math.round(performance.now() - started);
  const fail = (reason: InspectorConnectError["reason"], detail: string) =>
    new InspectorConnectError(
      `inspector handshake with ${socketPath} failed after ${waited()} ms (timeout ${connectTimeoutMs} ms): ${detail}`,
      socketPath,
      waited(),
      reason,
    );

  // 1. Connect, retrying until the child listens.
  let ws: WebSocket | undefined;
  let lastError = "the socket file never appeared";
  while (ws === undefined) {
    if (signal?.aborted) throw fail("aborted", "aborted by the caller");
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw fail("timeout", `could not connect (last error: ${lastError})`);
    if (!existsSync(socketPath)) {
      await delay(Math.max(0, Math.min(RETRY_INTERVAL_MS, remaining)));
      continue;
    }
    try {
      ws = await openOnce(url, remaining, signal);
    } catch (error) {
      lastError = describeError(error);
      await delay(Math.max(0, Math.min(RETRY_INTERVAL_MS, deadline - performance.now())));
    }
  }
  const socket = ws;

  // 2. Wire up the permanent handlers before sending anything.
  const stats: ChannelStats = {
    connectMs: 0,
    events: 0,
    malformed: 0,
    invalid: 0,
    ignored: 0,
    handlerErrors: 0,
    closeCode: null,
  };
  const pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let isClosed = false;

  socket.on("message", (data: WebSocket.RawData) => {
    const parsed = parseInspectorMessage(rawToText(data));
    switch (parsed.kind) {
      case "event":
        stats.events += 1;
        try {
          onEvent(parsed.event);
        } catch {
          stats.handlerErrors += 1;
        }
        break;
      case "response": {
        const waiter = pending.get(parsed.id);
        if (waiter) {
          pending.delete(parsed.id);
          if (parsed.error !== undefined) waiter.reject(fail("refused", `request ${parsed.id} was refused: ${parsed.error}`));
          else waiter.resolve();
        }
        break;
      }
      case "ignored":
        stats.ignored += 1;
        break;
      case "invalid":
        stats.invalid += 1;
        break;
      case "malformed":
        stats.malformed += 1;
        break;
    }
  });
  socket.on("error", () => {
    // A transport error is always followed by 'close'; that is where we react.
  });
  socket.on("close", (code: number) => {
    isClosed = true;
    stats.closeCode = code;
    for (const [id, waiter] of pending) waiter.reject(fail("closed", `socket closed (code ${code}) before reply ${id}`));
    pending.clear();
    signal?.removeEventListener("abort", onAbort);
    resolveClosed();
  });
  const close = () => {
    if (isClosed) return;
    try {
      socket.terminate();
    } catch {
      // already closing
    }
  };
  const onAbort = () => close();
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) close();

  const request = (id: number, method: string) =>
    new Promise<void>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      try {
        socket.send(JSON.stringify({ id, method }));
      } catch (error) {
        pending.delete(id);
        reject(fail("closed", `could not send ${method}: ${describeError(error)}`));
      }
    });

  // 3. Enable the domains; wait for both replies within the deadline.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopWaiting: ((error: Error) => void) | undefined;
  const onAbortDuringHandshake = () => stopWaiting?.(fail("aborted", "aborted by the caller"));
  try {
    if (signal?.aborted) throw fail("aborted", "aborted by the caller");
    const giveUp = new Promise<never>((_, reject) => {
      stopWaiting = reject;
      timer = setTimeout(
        () => reject(fail("timeout", "no reply to TestReporter.enable / LifecycleReporter.enable")),
        Math.max(0, deadline - performance.now()),
      );
    });
    signal?.addEventListener("abort", onAbortDuringHandshake, { once: true });
    await Promise.race([
      Promise.all([request(1, "TestReporter.enable"), request(2, "LifecycleReporter.enable")]),
      giveUp,
    ]);
  } catch (error) {
    pending.clear();
    close();
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbortDuringHandshake);
  }

  // 4. Release the child. Its reply (id 3) is not awaited: events follow it.
  try {
    socket.send(JSON.stringify({ id: 3, method: "Inspector.initialized" }));
  } catch (error) {
    close();
    throw fail("closed", `could not send Inspector.initialized: ${describeError(error)}`);
  }
  stats.connectMs = Math.round((performance.now() - started) * 10) / 10;

  return {
    closed,
    close,
    stats: () => ({ ...stats }),
  };
}
