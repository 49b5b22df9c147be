/**
 * The requests the runner writes to a shard child's inspector (inspector.ts,
 * steps 2 and 4 of its protocol; the child preload's side is
 * runner/child/shard-preload.ts): their ids by name, what the reply to each
 * answers, and what the runner sends next when a reply arrives.
 */

/**
 * Request ids by name. Ids below {@link FILE_BARRIER_FIRST_ID} are the
 * handshake's and the end-of-run barrier's; the per-file barriers of
 * `--bail` count up from it ({@link fileBarrierRequest}).
 */
export const REQUEST = {
  /** `TestReporter.enable`: found, start and end events. Its reply only acknowledges. */
  enableTests: 1,
  /** `LifecycleReporter.enable`: error events. Its reply only acknowledges. */
  enableLifecycle: 2,
  /** `Inspector.initialized`: lets an `--inspect-wait` child run. Its reply only acknowledges. */
  initialized: 3,
  /** `Runtime.evaluate` of {@link END_OF_RUN_EXPRESSION}: its reply carries the promise's `objectId`. */
  endOfRun: 4,
  /**
   * `Runtime.awaitPromise` of that promise, sent with the handshake under the
   * id Bun gives it ({@link END_OF_RUN_OBJECT_ID}), so Bun holds it before the
   * release: the preload's end-of-run wait blocks its thread, and a request
   * arriving after the last test would never be read. Its reply comes after
   * every event queued before it, so it proves the run's events all arrived;
   * the runner then releases the preload through its count file
   * (exec/marks.ts `acknowledgeEndOfRun`).
   */
  awaitEndOfRun: 5,
  /** The same, sent on the reply to `endOfRun` when Bun numbered the promise otherwise (never seen on 1.3.13 to 1.4.5). */
  awaitEndOfRunById: 6,
  /** `Runtime.evaluate` of {@link RELEASE_EXPRESSION}: lets the preload load the test files. Its reply answers nothing. */
  release: 7,
} as const;

/**
 * The expression {@link REQUEST}.endOfRun evaluates in the child: the promise the child
 * preload resolves after the last test. Either side may create it first.
 */
export const END_OF_RUN_EXPRESSION =
  '(globalThis[Symbol.for("shardguard.endOfRun")] ??= Promise.withResolvers()).promise';

/**
 * The `objectId` of {@link REQUEST}.endOfRun's promise: the first remote
 * object of the main context, as Bun 1.3.13 to 1.4.5 number it (measured).
 */
export const END_OF_RUN_OBJECT_ID = '{"injectedScriptId":1,"id":1}';

/**
 * The expression {@link REQUEST}.release evaluates, right after the two enables: releases
 * the child preload's hold before the first test file loads. A child told to
 * dial through `BUN_INSPECT_CONNECT_TO` (how shardguard starts it) does not
 * wait for a debugger itself, unlike `--inspect-wait`; the preload waits
 * for this instead, so no event of a test file can precede the enables.
 */
export const RELEASE_EXPRESSION =
  '(globalThis[Symbol.for("shardguard.released")] ??= Promise.withResolvers()).resolve()';

/**
 * Under `--bail` (the preload's global afterAll never runs when Bun bails),
 * one barrier per test file: for the k-th file (0-based) a request evaluates
 * the promise the preload resolves before that file's first test
 * ({@link firstTestExpression}), the next awaits it, so its reply proves
 * every event sent before (that file's `found` plan) arrived, and the third
 * releases the preload ({@link planAckExpression}) while the file after it
 * gets its own first request. Request ids: {@link FILE_BARRIER_FIRST_ID} + 3k,
 * + 3k + 1, + 3k + 2.
 */
export const firstTestExpression = (k: number) =>
  `(globalThis[Symbol.for("shardguard.firstTest.${k}")] ??= Promise.withResolvers()).promise`;

/** The expression that releases the preload's wait before the k-th file's first test. */
export const planAckExpression = (k: number) =>
  `(globalThis[Symbol.for("shardguard.planReceived.${k}")] ??= Promise.withResolvers()).resolve()`;

/** Id of the first request of the per-file barriers (ids below are the handshake's and the end of run's). */
export const FILE_BARRIER_FIRST_ID = 100;

/** Most files a shard has (--files-per-shard is at most 10,000): per-file barriers stop after that. */
const MAX_FILE_BARRIERS = 10_000;

/** The request that starts the k-th file's barrier. */
export function fileBarrierRequest(k: number): BarrierRequest {
  return {
    id: FILE_BARRIER_FIRST_ID + 3 * k,
    method: "Runtime.evaluate",
    params: { expression: firstTestExpression(k) },
  };
}

/** A request the runner writes to the child's inspector (JSON-RPC without the version field, as Bun takes it). */
export interface BarrierRequest {
  id: number;
  method: string;
  params?: Record<string, unknown>;
}

/**
 * The requests to send once the reply to request `id` arrived (`objectId`:
 * the remote object it carries): the end-of-run promise is awaited again
 * under its real id when Bun numbered it otherwise (`endOfRun` → `awaitEndOfRunById`);
 * under `--bail` (`perFile`) the k-th file's three requests likewise, the
 * next file's first going out with the release. Empty for any other reply.
 */
export function barrierRequestsAfter(id: number, objectId: string | undefined, perFile: boolean): BarrierRequest[] {
  if (id === REQUEST.endOfRun && objectId !== undefined && objectId !== END_OF_RUN_OBJECT_ID) {
    return [{ id: REQUEST.awaitEndOfRunById, method: "Runtime.awaitPromise", params: { promiseObjectId: objectId } }];
  }
  if (!perFile || id < FILE_BARRIER_FIRST_ID) return [];
  const k = Math.floor((id - FILE_BARRIER_FIRST_ID) / 3);
  const step = (id - FILE_BARRIER_FIRST_ID) % 3;
  if (step === 0 && objectId !== undefined)
    return [{ id: id + 1, method: "Runtime.awaitPromise", params: { promiseObjectId: objectId } }];
  if (step !== 1) return [];
  const release = { id: id + 1, method: "Runtime.evaluate", params: { expression: planAckExpression(k) } };
  return k + 1 < MAX_FILE_BARRIERS ? [release, fileBarrierRequest(k + 1)] : [release];
}

/**
 * What the runner writes, in one go, as the child dials in: both domains'
 * enables, `Inspector.initialized`, the end-of-run barrier's two requests
 * and the release of the preload's hold, in that order (Bun handles them in
 * order, so both domains are on before a test file loads); under `--bail`
 * (`perFile`) also the first file's barrier.
 */
export function handshakeRequests(perFile: boolean): BarrierRequest[] {
  const requests: BarrierRequest[] = [
    { id: REQUEST.enableTests, method: "TestReporter.enable" },
    { id: REQUEST.enableLifecycle, method: "LifecycleReporter.enable" },
    { id: REQUEST.initialized, method: "Inspector.initialized" },
    { id: REQUEST.endOfRun, method: "Runtime.evaluate", params: { expression: END_OF_RUN_EXPRESSION } },
    { id: REQUEST.awaitEndOfRun, method: "Runtime.awaitPromise", params: { promiseObjectId: END_OF_RUN_OBJECT_ID } },
    { id: REQUEST.release, method: "Runtime.evaluate", params: { expression: RELEASE_EXPRESSION } },
  ];
  if (perFile) requests.push(fileBarrierRequest(0));
  return requests;
}
