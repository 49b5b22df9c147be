/**
 * Reduces a {@link TestEventModel} to the {@link EventEvidence} the verdict
 * rules consume, so results/verdict.ts does not depend on event details.
 */
import type { EventEvidence, EventTest } from "../results/verdict-evidence.ts";
import type { TestEventModel } from "./test-model.ts";

/**
 * @param connected whether the channel was established (tests released)
 * @param now monotonic clock in ms, the same one the model was fed with
 * @param unreadFrames frames the channel could not read (ChannelStats.oversized)
 */
export function toEventEvidence(
  model: TestEventModel,
  connected: boolean,
  now: () => number = () => performance.now(),
  unreadFrames = 0,
): EventEvidence {
  const tests: EventTest[] = model.eventTests(now());
  const looseErrors = model
    .errorsOutsideTests()
    .map((e) => ({ file: e.file ?? null, message: e.message, type: e.name }));
  const concurrent = model.overlapped() ? { concurrent: true } : {};
  return { connected, tests, looseErrors, ...(unreadFrames > 0 ? { unreadFrames } : {}), ...concurrent };
}

/**
 * The shard note (ShardResult.notes) for inspector events that were lost,
 * or null when none were seen to be: fewer `start` events than the child
 * preload's test-start marks (which cannot be lost), or a run that reached
 * its end (the end mark) without the end-of-run barrier's reply, after
 * which its last events may be missing. The verdict already treats missing
 * events as unknown; this says that they were.
 *
 * @param testsStarted test starts the preload counted; undefined when unknown
 * @param flushed the barrier's reply arrived (ChannelStats.flushed)
 * @param finishedNormally the preload's end mark is there
 */
export function lostEventsNote(
  events: EventEvidence,
  testsStarted: number | undefined,
  flushed: boolean,
  finishedNormally: boolean | undefined,
): string | null {
  if (!events.connected) return null;
  let starts = 0;
  for (const t of events.tests) starts += t.attempts;
  if (testsStarted !== undefined && testsStarted > starts) {
    return `inspector events were lost: the child preload counted ${testsStarted} test starts, the events carried ${starts}${flushed ? "" : " (the end-of-run barrier was not answered)"}; what the missing events would add (retries, flakiness, lines, tests in flight) is unknown`;
  }
  if (finishedNormally === true && !flushed) {
    return "the end-of-run barrier was not answered though Bun reached the end of the run: the last inspector events may be lost";
  }
  return null;
}
