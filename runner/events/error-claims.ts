/**
 * Errors whose test is not known when they arrive. With `test.concurrent`
 * several tests run at once; Bun's `LifecycleReporter.error` names no test,
 * and when the error's stack gives no line at or below a running test's
 * `test()` call (a test defined through a helper module has no line in its
 * file, events/attribution.ts), the model cannot tell whose it is. It keeps
 * the error on the test started last (its earlier rule) and records it here;
 * the next event that proves a failure claims it:
 *
 * - a running test that starts again (Bun retries only after a failure), or
 *   that ends `fail` / `timeout`, takes the oldest pending error it was a
 *   candidate for (measured on Bun 1.4.4: the error arrives, then the failed
 *   test's retry `start`, then the other tests' `end`s);
 * - a candidate that ends any other way cannot own it; when one candidate
 *   is left, the error moves there.
 *
 * One proof claims one error, so two concurrent failures keep one error each.
 */
import { currentErrors, pushError, type EventError, type TestRecord } from "./test-state.ts";

/** Pending errors kept, the newest: beyond them the oldest stays where it was put. */
const MAX_PENDING = 64;

interface Pending {
  error: EventError;
  holder: TestRecord;
  candidates: Set<TestRecord>;
}

export class PendingErrors {
  private list: Pending[] = [];

  /** `error` was put on `holder`'s current attempt; `candidates` (holder included) were running. */
  add(error: EventError, holder: TestRecord, candidates: readonly TestRecord[]): void {
    this.list.push({ error, holder, candidates: new Set(candidates) });
    if (this.list.length > MAX_PENDING) this.list.shift();
  }

  /**
   * `record` proved a failure of its current attempt: it takes the oldest
   * pending error it is a candidate for. Call before a retry's new attempt is added.
   */
  failed(record: TestRecord): void {
    const index = this.list.findIndex((p) => p.candidates.has(record));
    if (index < 0) return;
    const [pending] = this.list.splice(index, 1);
    move(pending!, record);
  }

  /** `record` ended without failing: it owns no pending error. */
  cleared(record: TestRecord): void {
    if (this.list.length === 0) return; // nearly always: no copy of the list per ended test
    for (const pending of [...this.list]) {
      if (!pending.candidates.delete(record)) continue;
      if (pending.candidates.size === 1) {
        this.list.splice(this.list.indexOf(pending), 1);
        move(pending, [...pending.candidates][0]!);
      } else if (pending.candidates.size === 0) {
        this.list.splice(this.list.indexOf(pending), 1);
      }
    }
  }
}

function move(pending: Pending, to: TestRecord): void {
  if (pending.holder === to) return;
  for (const errors of pending.holder.attemptErrors ?? []) {
    const at = errors.indexOf(pending.error);
    if (at >= 0) errors.splice(at, 1);
  }
  const errors = currentErrors(to);
  if (errors) pushError(errors, { ...pending.error, attempt: to.attempts });
}
