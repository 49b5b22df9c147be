/**
 * The event model: folds inspector events into one state per test and answers what ran, what is running and what
 * never started, at any moment. Only Bun's `end` with `status: "pass"` is a pass; missing events leave a test
 * `found` or `running`, for results/verdict.ts to judge (docs/reports.md, "Verdict rules"). Bun's event order:
 * docs/bun-behaviour.md, "Inspector test events".
 */
import {
  attemptErrorsOf,
  attemptFailure,
  currentErrors,
  finalFailure,
  lastError,
  endedStatus,
  type DescribeRecord,
  type ErrorLocation,
  type EventError,
  type ModelOptions,
  type OutsideError,
  type TestRecord,
  pushError,
} from "./test-state.ts";
import type { BunEndStatus, ErrorEvent, TestEvent } from "./wire.ts";
import type { EventTest } from "../results/verdict-evidence.ts";
import { FileAttribution, UNATTRIBUTED } from "./attribution.ts";
import { PendingErrors } from "./error-claims.ts";
import { RootRelativePaths } from "./root-paths.ts";
import { testDurationNs } from "./elapsed.ts";
import { runOrder } from "./run-order.ts";

export {
  KEPT_ERRORS_AT_EACH_END,
  repairLatin1,
  type EventError,
  type ModelOptions,
  type OutsideError,
  type TestPhase,
} from "./test-state.ts";

/** The test in flight ({@link TestEventModel.running}): what the progress line and `bg status` show. */
export interface InFlightTest {
  /** The test's own name. */
  readonly name: string;
  /** `outer > inner > name`, the result model's `name`. */
  readonly fullName: string;
  /** Clock value (ms, the model's clock) at its latest `start`. */
  readonly startedAtMs: number | undefined;
}

/** Folds events, in arrival order ({@link apply}: live or from the journal), into per-test state; query any time. */
export class TestEventModel {
  private readonly now: () => number;
  private readonly tests_ = new Map<number, TestRecord>();
  /** The `running` records: the progress display asks for the one in flight several times a second. */
  private readonly runningNow = new Set<TestRecord>();
  private readonly describes = new Map<number, DescribeRecord>();
  private readonly attribution: FileAttribution;
  private readonly pending = new PendingErrors();
  private readonly outside: OutsideError[] = [];
  private seq = 0;
  /** Found blocks so far, tests and describes (run-order.ts). */
  private foundCount = 0;
  /** A test started while another was running: the tests run concurrently. */
  private overlap = false;
  /** {@link fileSet}'s answer; null once a `found` or a file mapping may have changed it. */
  private filesNow: Set<string> | null = null;
  private failedEndCount = 0;
  private leftOut = 0;

  constructor(options: ModelOptions) {
    this.now = options.now ?? (() => performance.now());
    this.attribution = new FileAttribution(options.files);
    this.paths = new RootRelativePaths(options.root);
  }

  private readonly paths: RootRelativePaths;

  /** Builds a model from a recorded event list (e.g. `readJournal`). Clock values are replay times. */
  static fromEvents(events: Iterable<TestEvent>, options: ModelOptions): TestEventModel {
    const model = new TestEventModel(options);
    for (const event of events) model.apply(event);
    return model;
  }

  /** Applies one event; inconsistent input (an unknown id, a describe's start, a second found) is ignored. */
  apply(event: TestEvent): void {
    switch (event.method) {
      case "TestReporter.found": {
        const { id, url, line, name, type, parentId } = event.params;
        this.found(id, url, line, name, type, parentId);
        return;
      }
      case "TestReporter.start":
        this.start(event.params.id);
        return;
      case "TestReporter.end":
        this.end(event.params.id, event.params.status, event.params.elapsed);
        return;
      case "LifecycleReporter.error":
        this.error(event);
        return;
    }
  }

  /** `TestReporter.found` field by field (wire.ts), for the byte reader (compact.ts). Never throws. */
  found(
    id: number,
    url: string,
    line: number | undefined,
    name: string,
    type: "test" | "describe",
    parentId: number | undefined,
  ): void {
    if (this.tests_.has(id) || this.describes.has(id)) return;
    // Attribution may map earlier entries too (attribution.ts rule 4).
    this.filesNow = null;
    const file = this.relativeFile(url);
    const parent = parentId === undefined ? undefined : (this.describes.get(parentId) ?? this.tests_.get(parentId));
    if (type === "describe") {
      const foundSeq = this.foundCount++;
      const describe: DescribeRecord = { name, parentId, foundSeq, prefix: undefined, ...UNATTRIBUTED };
      this.describes.set(id, describe);
      this.attribution.found(describe, file, parent);
      return;
    }
    const record: TestRecord = {
      id,
      foundSeq: this.foundCount++,
      name,
      url,
      file,
      line,
      parentId,
      phase: "found",
      bunStatus: undefined,
      elapsedNs: undefined,
      startedAtMs: undefined,
      endedAtMs: undefined,
      startSeq: 0,
      attempts: 0,
      attemptErrors: undefined,
      failedAttempts: undefined,
      mapped: undefined,
      own: false,
      viaBlock: false,
      block: undefined,
    };
    this.tests_.set(id, record);
    this.attribution.found(record, file, parent);
  }

  /** `TestReporter.start` of test `id`: see {@link found}. Never throws. */
  start(id: number): void {
    const record = this.progressed(id);
    if (!record) return;
    if (record.phase === "running" && record.attempts > 0) {
      // A new start with the attempt unended: Bun retried it, which it only does after a failure.
      this.pending.failed(record);
      (record.failedAttempts ??= []).push(attemptFailure(attemptErrorsOf(record, record.attempts), record.attempts));
    } else if (record.phase === "ended") {
      // A start after the end: taken as a new attempt.
      record.bunStatus = undefined;
      record.elapsedNs = undefined;
      record.endedAtMs = undefined;
    }
    record.attempts += 1;
    record.phase = "running";
    // Events arrive in Bun's order, so this is no lost end: tests run together.
    if (this.runningNow.size > (this.runningNow.has(record) ? 1 : 0)) this.overlap = true;
    this.runningNow.add(record);
    record.startedAtMs = this.now();
    record.startSeq = ++this.seq;
  }

  /** `TestReporter.end`; `elapsedNs` as Bun sent it (wrapped, corrected by the model's clock: elapsed.ts). */
  end(id: number, status: BunEndStatus, elapsedNs: number): void {
    const record = this.progressed(id);
    if (!record) return;
    if (status === "fail" || status === "timeout") {
      this.pending.failed(record);
      this.failedEndCount += 1;
    } else this.pending.cleared(record);
    const now = this.now();
    const receivedNs =
      record.phase === "running" && record.startedAtMs !== undefined ? (now - record.startedAtMs) * 1e6 : undefined;
    record.phase = "ended";
    this.runningNow.delete(record);
    record.bunStatus = status;
    record.elapsedNs = testDurationNs(elapsedNs, receivedNs);
    record.endedAtMs = now;
  }

  private error(event: ErrorEvent): void {
    const located = this.toEventError(event, 0);
    const { record: current, ambiguous } = this.runningRecordFor(located.locations);
    const errors = current ? currentErrors(current) : undefined;
    if (current && errors) {
      const error = { ...located, attempt: current.attempts };
      this.leftOut += pushError(errors, error);
      if (ambiguous) this.pending.add(error, current, ambiguous);
      return;
    }
    const error = located;
    const files = this.fileSet();
    const known = error.locations.find((location) => files.has(location.file));
    this.leftOut += pushError(this.outside, { ...error, file: (known ?? error.locations[0])?.file });
  }

  /** The record of a test's `start` or `end`, which closes the open found block; undefined for other ids. */
  private progressed(id: number): TestRecord | undefined {
    const record = this.tests_.get(id);
    if (record) {
      this.attribution.progressed(record);
      return record;
    }
    this.attribution.progressed(this.describes.get(id));
    return undefined;
  }

  /**
   * Every test as the verdict's {@link EventTest}, found order, straight from the records (no snapshot per test,
   * bench/README.md); call once events stopped. `now`: the model's ms clock.
   */
  eventTests(now: number): EventTest[] {
    const out: EventTest[] = [];
    const order = runOrder(this.describes, this.tests_);
    for (const record of this.tests_.values()) {
      const ended = record.phase === "ended";
      const status = ended && record.bunStatus ? endedStatus(record.bunStatus) : undefined;
      const durationMs = ended && record.elapsedNs !== undefined ? record.elapsedNs / 1e6 : undefined;
      const test: EventTest = {
        name: this.fullName(record),
        file: this.fileFor(record),
        state: record.phase,
        attempts: record.attempts,
        durationMs: durationMs ?? 0,
        attemptFailures: record.failedAttempts ?? [],
      };
      test.runOrder = order.get(record.id)!;
      const line = this.lineFor(record);
      if (line !== undefined) test.line = line;
      if (!record.own) test.viaHelper = true;
      if (status !== undefined) test.status = status;
      if (record.phase === "running" && record.startedAtMs !== undefined)
        test.runningForMs = Math.max(0, now - record.startedAtMs);
      if (ended && record.endedAtMs !== undefined) test.sinceEndMs = Math.max(0, now - record.endedAtMs);
      const last = status === "failed" ? undefined : lastError(record);
      if (status === "failed") test.failure = finalFailure(record, durationMs);
      else if (last) test.failure = { type: "failure", errorName: last.name, message: last.message };
      out.push(test);
    }
    return out;
  }

  /** True once a test started while another was running (`test.concurrent`, `--concurrent`). */
  overlapped(): boolean {
    return this.overlap;
  }

  /** `outer > inner > name`. */
  private fullName(record: TestRecord): string {
    return record.parentId === undefined ? record.name : this.prefixOf(record.parentId) + record.name;
  }

  /**
   * `outer > inner > ` for describe `parentId`, "" when unknown; kept on the describe so a test costs one lookup.
   * A chain that misses the top level (a parent not found yet, a loop) is walked each time and kept nowhere.
   */
  private prefixOf(parentId: number): string {
    const first = this.describes.get(parentId);
    if (first === undefined) return "";
    if (first.prefix !== undefined) return first.prefix;
    // Up to the first describe with its prefix known (or the top level)…
    const chain: DescribeRecord[] = [];
    const seen = new Set<number>();
    let id: number | undefined = parentId;
    let known = "";
    let complete = true;
    while (id !== undefined) {
      const describe = this.describes.get(id);
      if (describe === undefined || seen.has(id)) {
        complete = false;
        break;
      }
      if (describe.prefix !== undefined) {
        known = describe.prefix;
        break;
      }
      seen.add(id);
      chain.push(describe);
      id = describe.parentId;
    }
    // …then down again, each describe's prefix its parent's and its name.
    let prefix = known;
    for (let i = chain.length - 1; i >= 0; i--) {
      // Joined: a flat string, not a rope whose depth every test's name would walk when flattened.
      prefix = [prefix, chain[i]!.name, " > "].join("");
      if (complete) chain[i]!.prefix = prefix;
    }
    return prefix;
  }

  /** The test running now: of those `running`, the one started last (`test.concurrent` runs several). */
  running(): InFlightTest | undefined {
    const record = this.runningRecord();
    if (!record) return undefined;
    return { name: record.name, fullName: this.fullName(record), startedAtMs: record.startedAtMs };
  }

  /** Relative paths of the files with found tests, in first-found order. */
  files(): string[] {
    return [...this.fileSet()];
  }

  /** {@link files} as a set, kept until a `found` or file mapping changes it: each error outside tests asks. */
  private fileSet(): ReadonlySet<string> {
    if (this.filesNow === null) {
      this.filesNow = new Set();
      for (const record of this.tests_.values()) this.filesNow.add(this.fileFor(record));
    }
    return this.filesNow;
  }

  /**
   * Maps helper-defined tests to planned files by the preload's file records (attribution.ts, rule 5); call once
   * the child ended. `filesStarted`: absolute paths from the marks file, in order.
   */
  applyFileStarts(filesStarted: readonly string[]): void {
    this.filesNow = null;
    this.attribution.applyFileStarts(filesStarted.map((file) => this.relativeFile(file)));
  }

  private fileFor(record: TestRecord): string {
    return record.mapped ?? record.file;
  }

  /** The test's line in its planned file; undefined when Bun's line is a helper's. */
  private lineFor(record: TestRecord): number | undefined {
    return record.own ? record.line : undefined;
  }

  /** Errors while no test ran (a top-level throw, a hook error; Bun sends none for a bad import or syntax error). */
  errorsOutsideTests(): readonly OutsideError[] {
    return [...this.outside];
  }

  /** `fail` / `timeout` ends, retries included: what Bun's JUnit may carry failure texts for. */
  failedEnds(): number {
    return this.failedEndCount;
  }

  /** Error events left out of their lists (test-state.ts pushError). */
  errorsLeftOut(): number {
    return this.leftOut;
  }

  /**
   * The running test an error belongs to: the only one; else the test declared last at or above the error's first
   * line in a running test's file; else the one started last, with its rivals (`ambiguous`, error-claims.ts).
   */
  private runningRecordFor(locations: readonly ErrorLocation[]): {
    record: TestRecord | undefined;
    ambiguous?: TestRecord[];
  } {
    // One running test (or none) is the common case: no walk per error.
    if (this.runningNow.size <= 1) return { record: this.runningNow.values().next().value };
    // Several (test.concurrent): in found order, which breaks ties; the running ones only.
    const running = [...this.runningNow].sort((a, b) => a.foundSeq - b.foundSeq);
    if (running.length <= 1) return { record: running[0] };
    for (const location of locations) {
      if (location.line === undefined) continue;
      const candidates = running.filter((r) => {
        const line = this.lineFor(r);
        return this.fileFor(r) === location.file && line !== undefined && line <= location.line!;
      });
      if (candidates.length === 0) continue;
      return { record: candidates.reduce((best, r) => (this.lineFor(r)! > this.lineFor(best)! ? r : best)) };
    }
    // Narrowed to the running tests of a file the stack names, when there are any.
    const files = new Set(locations.map((l) => l.file));
    const inFile = running.filter((r) => files.has(this.fileFor(r)));
    const owners = inFile.length > 0 ? inFile : running;
    const record = owners.reduce((latest, r) => (r.startSeq > latest.startSeq ? r : latest));
    return { record, ambiguous: owners };
  }

  private runningRecord(): TestRecord | undefined {
    let latest: TestRecord | undefined;
    for (const record of this.runningNow) {
      if (latest === undefined || record.startSeq > latest.startSeq) latest = record;
    }
    return latest;
  }

  private relativeFile(url: string): string {
    return this.paths.relative(url);
  }

  private toEventError(event: ErrorEvent, attempt: number): EventError {
    const { message, name, urls = [], lineColumns = [] } = event.params;
    const locations = urls.map((url, index): ErrorLocation => {
      const location: ErrorLocation = { file: this.relativeFile(url) };
      const line = lineColumns[index * 2];
      const column = lineColumns[index * 2 + 1];
      if (line !== undefined && line > 0) location.line = line;
      if (column !== undefined && column > 0) location.column = column;
      return location;
    });
    return { name: name ?? "Error", message, locations, attempt };
  }
}
