/**
 * Reduces a {@link TestEventModel} to the {@link EventEvidence} the verdict
 * rules consume, so results/verdict.ts does not depend on event details.
 */
import type { EventEvidence, EventTest } from "../results/evidence.ts";
import type { TestEventModel } from "./model.ts";

/**
 * @param connected whether the channel was established (tests released)
 * @param now monotonic clock in ms, the same one the model was fed with
 * @param unreadFrames frames the channel could not read (ChannelStats.oversized)
 */
export function toEventEvidence(model: TestEventModel, connected: boolean, now: () => number = () => performance.now(), unreadFrames = 0): EventEvidence {
  const tests: EventTest[] = model.eventTests(now());
  const looseErrors = model.errorsOutsideTests().map((e) => ({ file: e.file ?? null, message: e.message, type: e.name }));
  return { connected, tests, looseErrors, ...(unreadFrames > 0 ? { unreadFrames } : {}) };
}
