/** Reduces a {@link TestEventModel} to the {@link EventEvidence} results/verdict.ts reads (no event details). */
import type { EventEvidence, EventTest } from "../results/verdict-evidence.ts";
import type { TestEventModel } from "./test-model.ts";

/**
 * The verdict's evidence of a model. `connected`: the channel was established; `now`: the model's ms clock;
 * `unreadFrames`: ChannelStats.oversized.
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
 * The shard note for inspector events seen to be lost, else null: fewer starts than the preload counted
 * (`testsStarted`), or the preload's end mark (`finishedNormally`) without the end-of-run reply (`flushed`).
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
    return (
      `inspector events were lost: the child preload counted ${testsStarted} test starts, the events carried ` +
      `${starts}${flushed ? "" : " (the end-of-run barrier was not answered)"}; what the missing events would add ` +
      `(retries, flakiness, lines, tests in flight) is unknown`
    );
  }
  if (finishedNormally === true && !flushed) {
    return (
      "the end-of-run barrier was not answered though Bun reached the end of the run: the last inspector events " +
      "may be lost"
    );
  }
  return null;
}
