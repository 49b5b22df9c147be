/**
 * Errors whose test is unknown on arrival: under `test.concurrent` Bun's error names no test and the stack may not
 * place it. It stays on the test started last and waits here for a proof: a candidate that retries or ends `fail`
 * / `timeout` takes the oldest it could own (Bun sends the error, then the retry's `start`); one that ends otherwise
 * drops out, and a lone candidate left takes it. One proof claims one error.
 */
import { currentErrors, pushError, type EventError, type TestRecord } from "./test-state.ts";

/** Pending errors kept, the newest: beyond them the oldest stays where it was put. */
const MAX_PENDING = 64;

interface Pending {
  error: EventError;
  holder: TestRecord;
  candidates: Set<TestRecord>;
}

/** The errors awaiting a claim, oldest first. */
export class PendingErrors {
  private list: Pending[] = [];

  /** `error` was put on `holder`'s current attempt; `candidates` (holder included) were running. */
  add(error: EventError, holder: TestRecord, candidates: readonly TestRecord[]): void {
    this.list.push({ error, holder, candidates: new Set(candidates) });
    if (this.list.length > MAX_PENDING) this.list.shift();
  }

  /** `record` failed its current attempt: it takes the oldest error it could own. Call before a retry's attempt. */
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
