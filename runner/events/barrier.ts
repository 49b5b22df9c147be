/** The requests the runner writes to a child's inspector (inspector.ts, steps 2 and 4) and what follows each reply. */

/** Request ids by name; the per-file barriers of `--bail` count up from {@link FILE_BARRIER_FIRST_ID}. */
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
   * `Runtime.awaitPromise` of that promise, sent with the handshake under the id Bun gives it: the preload's wait
   * blocks its thread, so a later request would go unread. Its reply follows every event queued before it.
   */
  awaitEndOfRun: 5,
  /** The same, when Bun numbered the promise otherwise (never seen on 1.3.13 to 1.4.5). */
  awaitEndOfRunById: 6,
  /**
   * `Runtime.evaluate` of {@link RELEASE_EXPRESSION}: lets the preload load the test files. Its reply answers nothing.
   */
  release: 7,
} as const;

/** What {@link REQUEST}.endOfRun evaluates: the promise the preload resolves after the last test. */
export const END_OF_RUN_EXPRESSION =
  '(globalThis[Symbol.for("shardguard.endOfRun")] ??= Promise.withResolvers()).promise';

/** The `objectId` of that promise as Bun 1.3.13 to 1.4.5 number it: the main context's first remote object. */
export const END_OF_RUN_OBJECT_ID = '{"injectedScriptId":1,"id":1}';

/**
 * What {@link REQUEST}.release evaluates: ends the preload's hold before the first file loads (a child dialing
 * through `BUN_INSPECT_CONNECT_TO` waits for no debugger), so no test event precedes the enables.
 */
export const RELEASE_EXPRESSION =
  '(globalThis[Symbol.for("shardguard.released")] ??= Promise.withResolvers()).resolve()';

/**
 * Under `--bail` (Bun then skips the preload's global afterAll), a barrier per file: evaluate the promise resolved
 * before the k-th file's first test, await it (its `found` plan arrived), release ({@link planAckExpression}).
 * Request ids: {@link FILE_BARRIER_FIRST_ID} + 3k, + 3k + 1, + 3k + 2.
 */
export const firstTestExpression = (k: number) =>
  `(globalThis[Symbol.for("shardguard.firstTest.${k}")] ??= Promise.withResolvers()).promise`;

/** The expression that releases the preload's wait before the k-th file's first test. */
export const planAckExpression = (k: number) =>
  `(globalThis[Symbol.for("shardguard.planReceived.${k}")] ??= Promise.withResolvers()).resolve()`;

/** Id of the first request of the per-file barriers (ids below are the handshake's and the end of run's). */
export const FILE_BARRIER_FIRST_ID = 100;

/** Most files a shard has (the --files-per-shard bound): per-file barriers stop after that. */
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
 * The requests to send once the reply to `id` arrived (`objectId`: its remote object): the end-of-run await under
 * Bun's own id, and under `--bail` (`perFile`) the next step of the file barriers. Empty otherwise.
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

/** The handshake, written at once as the child dials in; Bun handles it in order. `perFile`: the first file barrier. */
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
