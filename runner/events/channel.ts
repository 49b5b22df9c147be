/**
 * What the inspector event channel (inspector.ts `listenForTestEvents`)
 * takes and hands back: its options, the channel, its counters, and the
 * error of a failed handshake.
 */
import type { CompactSink } from "./compact.ts";
import type { TestEvent } from "./wire.ts";

/** Options of `listenForTestEvents` (inspector.ts). */
export interface ListenOptions {
  /**
   * Absolute path of the unix socket to listen on, from `socketPathFor`
   * (nothing may exist there yet); the child gets `BUN_INSPECT_CONNECT_TO=unix://<it>`
   * (exec/bun-command.ts `inspectorEnv`; `--inspect-wait=unix:<it>` dials it too).
   */
  socketPath: string;
  /**
   * Budget in ms, counted from the call, for the child to dial in. Spawn
   * the child right after.
   */
  connectTimeoutMs: number;
  /**
   * Called synchronously for every valid event the schema parsed (any
   * message not in Bun's compact form: error events, escaped names, other
   * spacing), in arrival order with the sink's. An exception thrown here is
   * caught and counted (`handlerErrors`), never propagated into the socket's
   * event loop. `message` is undefined: the event, not the received text,
   * is what the schema vouches for (a journal encodes the event).
   */
  onEvent: (event: TestEvent, message: string | Uint8Array | undefined) => void;
  /**
   * Gets the found, start and end messages in Bun's compact form field by
   * field (compact.ts), without an event object, with the message's bytes
   * (valid only during the call). Exceptions are caught and counted like
   * `onEvent`'s.
   */
  sink: CompactSink;
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
   * (the per-file barriers of barrier.ts `firstTestExpression`): set under `--bail`, where
   * Bun ends without the end-of-run barrier and a fast file could lose its
   * `found` plan. The child preload takes part when SHARDGUARD_YIELD=bail.
   */
  firstTestBarrier?: boolean;
  /**
   * Called once, synchronously, when the end-of-run barrier's reply arrives:
   * the child preload is then waiting after its global afterAll, every test
   * over, so the caller sees the child's process tree as the run ended
   * (exec/shard-attempt.ts lists its descendants here instead of the preload,
   * bench/README.md), and then releases it through its count file
   * (exec/marks.ts `acknowledgeEndOfRun`). An exception thrown here is
   * counted (`handlerErrors`); unreleased, the preload stops waiting at its bound.
   */
  onEndOfRun?: () => void;
  /** Aborting rejects a pending handshake and closes an open channel. */
  signal?: AbortSignal;
}

/** Counters of one channel, for diagnostics and the report's reason lines. */
export interface ChannelStats {
  /** ms from the call to `listenForTestEvents` (inspector.ts) to the child's connection, or null before it. */
  dialMs: number | null;
  /** ms from the call to `listenForTestEvents` (inspector.ts) to the handshake's write (0 before it). */
  connectMs: number;
  /** True once the end-of-run barrier's reply arrived: every event the run sent was received. */
  flushed: boolean;
  /** The first error reply to one of our requests, or null. */
  requestError: string | null;
  /** Valid events delivered to `onEvent` or the sink. */
  events: number;
  /** Messages that were not JSON objects. */
  malformed: number;
  /** Known methods whose params failed schema validation (dropped, and named in the shard's notes). */
  invalid: number;
  /** The first of them: its method and the schema's first issue, e.g. `TestReporter.end: params.status: Invalid option`; null when none. */
  firstInvalid: string | null;
  /** Messages with methods we do not consume (dropped). */
  ignored: number;
  /**
   * Frames that could not be read at all: over frames.ts MAX_KEPT_BYTES even
   * with every string cut (a frame of any length whose strings are long is
   * read, its strings cut to their tails).
   */
  oversized: number;
  /** Exceptions thrown by `onEvent`, the sink or `onRead` (caught). */
  handlerErrors: number;
  /** Times reading paused so a busy stream's messages gather (inspector.ts, read batching). */
  readPauses: number;
  /** Connections cut unread: any after the first. */
  refused: number;
  /**
   * Who ended the trusted connection: `peer` (the child closed it or
   * exited), `local` ({@link EventChannel.close}, an abort, a failed
   * handshake); null while it is open or when nobody dialed.
   */
  closedBy: "peer" | "local" | null;
}

/** A listening channel returned by `listenForTestEvents` (inspector.ts). */
export interface EventChannel {
  /**
   * Resolves once the child dialed in and the handshake was written (its
   * tests are released). Rejects with {@link InspectorConnectError} when
   * nobody dialed within the budget, or the signal aborted or
   * {@link EventChannel.close} was called first; the channel is closed then.
   */
  readonly ready: Promise<void>;
  /**
   * Resolves when the trusted connection has closed, or the channel was
   * closed (also when nobody ever dialed). Never rejects. All events have
   * been delivered to `onEvent` by then.
   */
  readonly closed: Promise<void>;
  /**
   * Cuts the connection, stops listening and removes the socket file.
   * Idempotent; `closed` then resolves.
   */
  close(): void;
  /** A snapshot of the counters. */
  stats(): ChannelStats;
}

/**
 * Thrown by `listenForTestEvents` (inspector.ts) (`invalid-path`, `listen`) or as the
 * rejection of {@link EventChannel.ready}. The caller treats it as
 * "per-test data missing" for the shard (and must stop the child: its
 * preload holds the tests until the handshake releases it, a minute at
 * most; with `--inspect-wait` a child waits forever).
 */
export class InspectorConnectError extends Error {
  override readonly name = "InspectorConnectError";
  constructor(
    message: string,
    readonly socketPath: string,
    /** ms spent before giving up. */
    readonly waitedMs: number,
    /**
     * Why: `timeout` (nobody dialed); `aborted` (the signal, or a close
     * first); `invalid-path` (not absolute, or unsafe characters: nothing
     * was tried); `listen` (the socket could not be created).
     */
    readonly reason: "timeout" | "aborted" | "invalid-path" | "listen",
  ) {
    super(message);
  }
}

/**
 * The shard notes (ShardResult.notes) of a channel's counters: one sentence
 * per kind of message the channel could not use, none when it used them all.
 */
export function channelNotes(stats: ChannelStats): string[] {
  const notes: string[] = [];
  const n = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  if (stats.invalid > 0) {
    notes.push(
      `${n(stats.invalid, "inspector event", "inspector events")} did not match the event schema and ${stats.invalid === 1 ? "was" : "were"} not applied (first: ${stats.firstInvalid})`,
    );
  }
  if (stats.oversized > 0) {
    const one = stats.oversized === 1;
    notes.push(
      `${n(stats.oversized, "inspector frame was", "inspector frames were")} too large to read even with ${one ? "its" : "their"} strings cut; a test ${one ? "it" : "they"} described may be missing from the entries`,
    );
  }
  if (stats.malformed > 0)
    notes.push(`${n(stats.malformed, "inspector message was", "inspector messages were")} not JSON`);
  return notes;
}
