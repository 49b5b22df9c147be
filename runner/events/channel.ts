/** What `listenForTestEvents` (inspector.ts) takes and hands back: options, channel, counters, handshake error. */
import type { CompactSink } from "./compact.ts";
import type { TestEvent } from "./wire.ts";

/** Options of `listenForTestEvents` (inspector.ts). */
export interface ListenOptions {
  /** Absolute path from `socketPathFor` (nothing there yet) that the child dials (exec/bun-command.ts). */
  socketPath: string;
  /** ms, from the call, for the child to dial in: spawn it right after. */
  connectTimeoutMs: number;
  /** Each valid event not in compact form, in order with the sink's; its throws are counted (`handlerErrors`). */
  onEvent: (event: TestEvent, message: string | Uint8Array | undefined) => void;
  /** Gets compact found, start and end field by field (compact.ts); `message` bytes valid during the call only. */
  sink: CompactSink;
  /** Called once per socket read, before its messages are delivered (one clock reading for all of them). */
  onRead?: () => void;
  /** Called once per refused connection, with a one-line description. */
  onRefused?: (detail: string) => void;
  /** For `--bail`: hold each file's first test until its `found` plan arrived (barrier.ts `firstTestExpression`). */
  firstTestBarrier?: boolean;
  /** Once, at the end-of-run reply: the caller reads the child's tree, then releases the preload (exec/marks.ts). */
  onEndOfRun?: () => void;
  /** Aborting rejects a pending handshake and closes an open channel. */
  signal?: AbortSignal;
}

export interface ChannelStats {
  /** ms from the call to the child's connection, or null before it. */
  dialMs: number | null;
  /** ms from the call to the handshake's write (0 before it). */
  connectMs: number;
  /** The end-of-run barrier's reply arrived: every event the run sent was received. */
  flushed: boolean;
  /** The first error reply to one of our requests, or null. */
  requestError: string | null;
  /** Valid events delivered to `onEvent` or the sink. */
  events: number;
  /** Messages that were not JSON objects. */
  malformed: number;
  /** Known methods whose params failed the schema (dropped, named in the shard's notes). */
  invalid: number;
  /** The first of them: its method and the schema's first issue; null when none. */
  firstInvalid: string | null;
  /** Messages with methods we do not consume (dropped). */
  ignored: number;
  /** Frames unreadable even with every string cut (over frames.ts MAX_KEPT_BYTES). */
  oversized: number;
  /** Exceptions thrown by `onEvent`, the sink or `onRead` (caught). */
  handlerErrors: number;
  /** Times reading paused so a busy stream's messages gather (inspector.ts). */
  readPauses: number;
  /** Connections cut unread: any after the first. */
  refused: number;
  /** `peer` (the child closed or exited) or `local` (close, abort, failed handshake); null while open or undialed. */
  closedBy: "peer" | "local" | null;
}

/** A listening channel returned by `listenForTestEvents` (inspector.ts). */
export interface EventChannel {
  /** Resolves once the child dialed and the handshake was written; else rejects with {@link InspectorConnectError}. */
  readonly ready: Promise<void>;
  /** Resolves when the trusted connection or the channel closed, every event delivered; never rejects. */
  readonly closed: Promise<void>;
  /** Cuts the connection, stops listening, removes the socket file; idempotent. */
  close(): void;
  stats(): ChannelStats;
}

/** A failed handshake: the shard lacks per-test data, and the caller must stop the child (its preload holds tests). */
export class InspectorConnectError extends Error {
  override readonly name = "InspectorConnectError";
  constructor(
    message: string,
    readonly socketPath: string,
    readonly waitedMs: number,
    /** `timeout` (nobody dialed), `aborted` (signal or close), `invalid-path` (nothing tried), `listen` (no bind). */
    readonly reason: "timeout" | "aborted" | "invalid-path" | "listen",
  ) {
    super(message);
  }
}

/** The shard notes (ShardResult.notes) for messages the channel could not use: one sentence per kind. */
export function channelNotes(stats: ChannelStats): string[] {
  const notes: string[] = [];
  const n = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  if (stats.invalid > 0) {
    notes.push(
      `${n(stats.invalid, "inspector event", "inspector events")} did not match the event schema and ` +
        `${stats.invalid === 1 ? "was" : "were"} not applied (first: ${stats.firstInvalid})`,
    );
  }
  if (stats.oversized > 0) {
    const one = stats.oversized === 1;
    notes.push(
      `${n(stats.oversized, "inspector frame was", "inspector frames were")} too large to read even with ` +
        `${one ? "its" : "their"} strings cut; a test ${one ? "it" : "they"} described may be missing from the entries`,
    );
  }
  if (stats.malformed > 0)
    notes.push(`${n(stats.malformed, "inspector message was", "inspector messages were")} not JSON`);
  return notes;
}
