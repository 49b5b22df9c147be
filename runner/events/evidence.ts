/**
 * Reduces a {@link TestEventModel} to the {@link EventEvidence} the verdict
 * rules consume, so results/verdict.ts does not depend on event details.
 */
import type { EventEvidence, EventTest } from "../results/evidence.ts";
import type { TestEventModel } from "./model.ts";

/**
 * @param connected whether the channel was established (tests released)
 * @param now monotonic clock in ms, the same one the model was fed with
 */
export function toEventEvidence(model: TestEventModel, connected: boolean, now: () => number = () => performance.now()): EventEvidence {
  const tests: EventTest[] = model.tests().map((t) => ({
    name: t.fullName,
    file: t.file,
    ...(t.line !== undefined ? { line: t.line } : {}),
    ...(t.viaHelper ? { viaHelper: true } : {}),
    state: t.phase,
    ...(t.status !== undefined ? { status: t.status } : {}),
    attempts: t.attempts,
    durationMs: t.durationMs ?? 0,
    ...(t.phase === "running" && t.startedAtMs !== undefined ? { runningForMs: Math.max(0, now() - t.startedAtMs) } : {}),
    ...(t.phase === "ended" && t.endedAtMs !== undefined ? { sinceEndMs: Math.max(0, now() - t.endedAtMs) } : {}),
    ...(t.failure ? { failure: t.failure } : t.errors.length > 0 ? { failure: { type: t.errors.at(-1)!.name, message: t.errors.at(-1)!.message } } : {}),
    attemptFailures: [...t.attemptFailures],
  }));
  const looseErrors = model.errorsOutsideTests().map((e) => ({ file: e.file ?? null, message: e.message, type: e.name }));
  return { connected, tests, looseErrors };
}
