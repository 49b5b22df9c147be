/**
 * Tests' way into the inspector channel when they want every message as an
 * event: the runner hands Bun's compact found, start and end messages to a
 * field-by-field sink (runner/events/compact.ts); {@link eventSink} turns
 * those fields back into the event JSON.parse of the bytes gives, so a test
 * sees one ordered stream of events.
 */
import {
  listenForTestEvents,
  type CompactSink,
  type EventChannel,
  type ListenOptions,
} from "../../runner/events/inspector.ts";
import type { TestEvent } from "../../runner/events/wire.ts";

/**
 * A sink that builds each compact message's event (keys in Bun's order,
 * `parentId` only when sent) and passes it to `onEvent` with the message's
 * bytes.
 */
export function eventSink(onEvent: (event: TestEvent, message: Uint8Array) => void): CompactSink {
  return {
    found: (id, url, line, name, type, parentId, message) =>
      onEvent(
        {
          method: "TestReporter.found",
          params: { id, url, line, name, type, ...(parentId === undefined ? {} : { parentId }) },
        },
        message,
      ),
    start: (id, message) => onEvent({ method: "TestReporter.start", params: { id } }, message),
    end: (id, status, elapsed, message) =>
      onEvent({ method: "TestReporter.end", params: { id, status, elapsed } }, message),
  };
}

/**
 * {@link listenForTestEvents} with every event, compact or not, going to
 * `onEvent` in arrival order (`message`: the compact message's bytes, else
 * undefined).
 */
export function listenForAllEvents(options: Omit<ListenOptions, "sink">): EventChannel {
  return listenForTestEvents({ ...options, sink: eventSink((event, message) => options.onEvent(event, message)) });
}
