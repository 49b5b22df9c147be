/**
 * The history's worker thread (docs/history.md, "Never at the run's expense"): it opens the history, reads the past
 * of the tests the console's end speaks of, then appends the run in one transaction, beside the main thread's
 * report writes. Messages: in {@link AppendJob}; out "past" (always first), then "done" or "error".
 */
import { openStore } from "./open.ts";
import { loadOutcomes } from "./queries.ts";
import { TEST_COLUMNS, type TestRow } from "./schema.ts";
import type { AppendJob, AppendReply, StripsJob } from "./append-job.ts";
import { loadStrips } from "./strips.ts";

declare const self: Worker;

/** The `tests` rows from the job's flat cells (TEST_COLUMNS order). */
function rowsOf(cells: readonly TestRow[keyof TestRow][]): TestRow[] {
  const width = TEST_COLUMNS.length;
  const rows: TestRow[] = [];
  for (let i = 0; i < cells.length; i += width) {
    const row = {} as TestRow;
    for (let c = 0; c < width; c++) row[TEST_COLUMNS[c]!] = cells[i + c] ?? null;
    rows.push(row);
  }
  return rows;
}

/** Runs one job; every failure becomes an "error" reply (after a "past" one), never a thrown error. */
async function run(job: AppendJob): Promise<void> {
  const reply = (message: AppendReply) => self.postMessage(message);
  let pastSent = false;
  const store = await openStore(job.target).catch((error: unknown) => error as Error);
  try {
    if (store instanceof Error) throw store;
    const past = await loadOutcomes(store, { last: job.window }, job.spoken);
    reply({ kind: "past", past });
    pastSent = true;
    const added = await store.append(job.run, rowsOf(JSON.parse(job.cells)));
    reply({ kind: "done", added });
  } catch (error) {
    if (!pastSent) reply({ kind: "past", past: [] });
    reply({ kind: "error", message: (error as Error).message ?? String(error) });
  } finally {
    if (!(store instanceof Error)) await store.close().catch(() => {});
  }
}

/** Reads report.html's strips; a failure is a null reply (the append, which opens the same history, says why). */
async function strips(job: StripsJob): Promise<void> {
  const store = await openStore(job.target).catch(() => null);
  const read = store === null ? null : await loadStrips(store, new Set(job.files)).catch(() => null);
  await store?.close().catch(() => {});
  self.postMessage({ kind: "strips", strips: read } satisfies AppendReply);
}

self.onmessage = (event: MessageEvent<AppendJob | StripsJob>) =>
  void ("files" in event.data ? strips(event.data) : run(event.data));
