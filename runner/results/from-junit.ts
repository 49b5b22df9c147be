/**
 * The verdict of a shard that ended normally: Bun's JUnit gives final statuses, events add retries, flakiness,
 * lines and exact names, their `found` list makes entries complete (docs/reports.md, "Hooks, .only and --bail").
 */
import type { Failure, ShardResult, ShardStatus, TestResult } from "./report-model.ts";
import type { BunJUnitFile } from "./bun-junit.ts";
import {
  count,
  emptyFile,
  emptyFilesNote,
  fromEvent,
  loadFailure,
  synthetic,
  type ShardResultWithoutVerdict,
} from "./entries.ts";
import { cleanEventName, cleanJUnitName } from "./text.ts";
import type { EventTest, ShardEvidence } from "./verdict-evidence.ts";

/** The message of a failure for which neither Bun's JUnit nor the events had one. */
export const NO_MESSAGE =
  "failed; Bun's JUnit gives no message (Bun 1.3.x) and no event error was this test's: see the shard's log";

/** Bun 1.4.4's name for a hook's testcase in its JUnit. */
const BUN_HOOK_NAME = "(unnamed)";
const SEP = " > ";

/** Control characters: Bun's JUnit drops them from names, events keep them. */
const CONTROLS = /[\u0000-\u001f\u007f]/;
const CONTROLS_ALL = /[\u0000-\u001f\u007f]/g;

/** A name as matched between a JUnit testcase and an event test. */
const matchName = (name: string) => (CONTROLS.test(name) ? name.replace(CONTROLS_ALL, "") : name);

/**
 * Event tests by file, taken by matched name, first left first (--rerun-each repeats a name). Bun lists a
 * file's tests in event order, so an index by name is built only when it differs (bench/README.md).
 */
class EventIndex {
  private readonly byFile = new Map<string, FileEvents>();

  add(file: string, t: EventTest): void {
    let events = this.byFile.get(file);
    if (events === undefined) this.byFile.set(file, (events = new FileEvents()));
    events.add(t);
  }

  /** Tests left under this file and name. */
  count(file: string, name: string): number {
    return this.byFile.get(file)?.count(matchName(name)) ?? 0;
  }

  /** Takes the first test left under this file and name. */
  take(file: string, name: string): EventTest | undefined {
    return this.byFile.get(file)?.take(name);
  }

  /** This file's tests not taken, in event order. */
  left(file: string): EventTest[] {
    return this.byFile.get(file)?.left() ?? [];
  }
}

/** One file's event tests for {@link EventIndex}. */
class FileEvents {
  private readonly tests: EventTest[] = [];
  private readonly taken: boolean[] = [];
  /** Every test before this one is taken. */
  private first = 0;
  /** Positions of the tests by matched name, built on the first take out of order. */
  private byName: Map<string, { at: number[]; next: number }> | null = null;

  add(t: EventTest): void {
    if (this.byName !== null) throw new Error("FileEvents: a test added after the index by name was built");
    this.tests.push(t);
    this.taken.push(false);
  }

  /** Takes the first test left whose matched name is `name`'s. */
  take(name: string): EventTest | undefined {
    while (this.first < this.tests.length && this.taken[this.first]) this.first++;
    // The usual case: Bun's order, the same text, no matching needed.
    if (this.first < this.tests.length) {
      const next = this.tests[this.first]!.name;
      if (next === name || matchName(next) === matchName(name)) return this.takeAt(this.first);
    }
    const found = this.positions(matchName(name));
    return found === undefined ? undefined : this.takeAt(found.at[found.next]!);
  }

  /** The tests not taken, in event order. */
  left(): EventTest[] {
    const out: EventTest[] = [];
    for (let i = this.first; i < this.tests.length; i++) if (!this.taken[i]) out.push(this.tests[i]!);
    return out;
  }

  count(key: string): number {
    const found = this.positions(key);
    if (found === undefined) return 0;
    let n = 0;
    for (let i = found.next; i < found.at.length; i++) if (!this.taken[found.at[i]!]) n++;
    return n;
  }

  private takeAt(i: number): EventTest {
    this.taken[i] = true;
    return this.tests[i]!;
  }

  /** The positions under `key`, `next` at the first one left; undefined when none is left. */
  private positions(key: string): { at: number[]; next: number } | undefined {
    if (this.byName === null) {
      this.byName = new Map();
      this.tests.forEach((t, i) => {
        const name = matchName(t.name);
        const found = this.byName!.get(name);
        if (found === undefined) this.byName!.set(name, { at: [i], next: 0 });
        else found.at.push(i);
      });
    }
    const found = this.byName.get(key);
    if (found === undefined) return undefined;
    while (found.next < found.at.length && this.taken[found.at[found.next]!]) found.next++;
    return found.next < found.at.length ? found : undefined;
  }
}

/** A hook's testcase: Bun names it "(unnamed)" and gives it no line (a real test always has one). */
export function isHook(t: TestResult): boolean {
  return t.line === undefined && (t.name === BUN_HOOK_NAME || t.name.endsWith(SEP + BUN_HOOK_NAME));
}

/** A failed beforeAll: the describe path it covers and its error. */
interface FailedScope {
  /** Prefix of the full names of the tests it covers ("" for the file). */
  prefix: string;
  failure: Failure;
}

const bunFailed = (junit: BunJUnitFile[]) => junit.some((f) => f.tests.some((t) => t.status === "failed"));

/**
 * Takes over `junit`'s entries (not copied): do not read `junit` again.
 * @param code the child's exit code (0 or 1 lead to passed/failed; anything else is crashed)
 */
export function fromJUnit(
  ev: ShardEvidence,
  base: ShardResultWithoutVerdict,
  code: number,
  junit: BunJUnitFile[],
): ShardResult {
  const byFile = new Map(junit.map((f) => [f.file, f.tests]));
  // Before the entries are renamed: a proof by name counts Bun's names.
  const sources = eventSources(ev, junit);
  const bailed = ev.bail === true && bunFailed(junit);
  // --bail, exit 1, no failure in Bun's JUnit: a file failed to load and the files after it never started.
  const bailedOnLoad = ev.bail === true && code === 1 && !bailed;
  let loadFailed = false;
  // Exit 1 explained by failed tests: a batch file with nothing in it may be empty, not only a load error.
  const exitExplained = code === 1 && !bailed && bunFailed(junit);
  const tests: TestResult[] = [];
  const missing: string[] = [];
  /** Files of {@link exitExplained} shards that registered no test. */
  const unregistered: string[] = [];
  let enriched = false;
  /** Found tests Bun never ran because a beforeAll of theirs failed. */
  let underFailedHooks = 0;

  for (const file of ev.files) {
    const listed = junitEntriesOf(ev, file, byFile.get(file) ?? [], sources);
    if (listed.enriched) enriched = true;
    const left = sources.queues.left(file);

    if (listed.out.length === 0) {
      // Bun's JUnit has nothing for this file: it did not run.
      missing.push(file);
      const gone = missingFile(ev, file, left, { code, bailed: bailed || loadFailed, exitExplained });
      if (gone.kind === "load-error") loadFailed = bailedOnLoad;
      if (gone.kind === "unregistered") unregistered.push(file);
      tests.push(gone.entry);
      for (const e of left) tests.push(fromEvent(e, "never-started", { type: "never-started", message: gone.why }));
      continue;
    }

    for (const entry of listed.out) tests.push(entry);
    for (const e of left) {
      enriched = true;
      const { entry, underFailedHook } = unreportedEntry(e, listed.scopes, bailed);
      if (underFailedHook) underFailedHooks += 1;
      tests.push(entry);
    }
  }
  // Bun 1.3.x's JUnit failures have no message; one the events could not fill says so rather than stay empty.
  for (const t of tests) if (t.failure !== undefined && t.failure.message === "") t.failure.message = NO_MESSAGE;
  const gaps = { missing, unregistered, underFailedHooks, bailed: bailed || loadFailed };
  const verdict = shardVerdict(ev, code, tests, gaps);
  return { ...base, ...verdict, testSource: enriched ? "junit+events" : "junit", tests };
}

/** Where the events of a JUnit testcase are looked up (docs/reports.md, "Test names"). */
interface EventSources {
  /** The event tests of planned files, by file. */
  queues: EventIndex;
  /** The event tests whose planned file the events could not prove, all under "". */
  unplaced: EventIndex;
  /** Takes the unplaced test named `name` when that name is a proof; undefined otherwise. */
  uniqueUnplaced(name: string): EventTest | undefined;
}

/** The shard's event tests, by file where the events prove a planned file; call before renaming `junit`'s entries. */
function eventSources(ev: ShardEvidence, junit: readonly BunJUnitFile[]): EventSources {
  const planned = new Set(ev.files);
  const queues = new EventIndex();
  // Tests whose file the events could not prove (helper modules, events/attribution.ts): Bun's JUnit names it.
  const unplaced = new EventIndex();
  let unplacedCount = 0;
  for (const t of ev.events?.tests ?? []) {
    if (planned.has(t.file)) queues.add(t.file, t);
    else {
      unplaced.add("", t);
      unplacedCount += 1;
    }
  }
  // A proof: a name one unplaced event and one JUnit testcase of the shard carry.
  const junitNames = new Map<string, number>();
  if (unplacedCount > 0)
    for (const f of junit)
      for (const t of f.tests) junitNames.set(matchName(t.name), (junitNames.get(matchName(t.name)) ?? 0) + 1);
  const uniqueUnplaced = (name: string): EventTest | undefined => {
    if (unplaced.count("", name) !== 1) return undefined;
    return junitNames.get(matchName(name)) === 1 ? unplaced.take("", name) : undefined;
  };
  return { queues, unplaced, uniqueUnplaced };
}

/** One file's testcases in Bun's order: a hook only when it failed (docs/reports.md, "Hooks, `.only`, `--bail`"). */
function junitEntriesOf(
  ev: ShardEvidence,
  file: string,
  entries: TestResult[],
  sources: EventSources,
): { out: TestResult[]; scopes: FailedScope[]; enriched: boolean } {
  const out: TestResult[] = [];
  const scopes: FailedScope[] = [];
  let enriched = false;
  // Found before the loop below renames the entries it reuses.
  const afterAll = afterAllHooks(entries);
  const hookTexts = hookErrorsOf(ev, file, entries);
  entries.forEach((t, i) => {
    if (isHook(t)) {
      if (t.status !== "failed") return; // hooks are never entries unless they fail
      const prefix = t.name.slice(0, t.name.length - BUN_HOOK_NAME.length);
      const after = afterAll.get(i)!;
      const fallback: Failure = { type: "failure", message: `${after ? "afterAll" : "beforeAll"} hook failed` };
      const failure = (t.failure?.message ? t.failure : hookTexts?.shift()) ?? t.failure ?? fallback;
      // Bun's own name: the failed testcases (and so the failed count) are Bun's.
      out.push({ ...t, name: cleanJUnitName(t.name), failure });
      if (!after) scopes.push({ prefix, failure });
      return;
    }
    const e = sources.queues.take(t.file, t.name) ?? sources.uniqueUnplaced(t.name);
    if (e) enriched = true;
    out.push(e ? withEvents(t, e) : withoutEvents(t, sources.unplaced));
  });
  return { out, scopes, enriched };
}

/** Which failed hooks of a file's testcases are afterAlls (docs/reports.md, "Hooks, `.only`, `--bail`"). */
function afterAllHooks(entries: readonly TestResult[]): Map<number, boolean> {
  const afterAll = new Map<number, boolean>();
  entries.forEach((t, i) => {
    if (!isHook(t) || t.status !== "failed") return;
    const prefix = t.name.slice(0, t.name.length - BUN_HOOK_NAME.length);
    afterAll.set(
      i,
      entries.slice(0, i).some((e) => e.name.startsWith(prefix)),
    );
  });
  return afterAll;
}

/** A JUnit test no event took: Bun's entry, renamed, without a line that may be a helper module's. */
function withoutEvents(t: TestResult, unplaced: EventIndex): TestResult {
  // A test of this name was defined through a helper module: Bun's JUnit line may be the helper's.
  if (t.line !== undefined && unplaced.count("", t.name) > 0) {
    const { line: _helperLine, ...rest } = t;
    return { ...rest, name: cleanJUnitName(t.name) };
  }
  t.name = cleanJUnitName(t.name);
  return t;
}

/** A JUnit test with its events: their message where Bun's has none, exact name, line, retries, flakiness. */
function withEvents(t: TestResult, e: EventTest): TestResult {
  // Bun 1.3.x's JUnit failures carry no message: the events' error is the test's.
  if (t.failure && !t.failure.message && e.failure)
    t.failure = { ...e.failure, ...(t.failure.details ? { details: t.failure.details } : {}) };
  const flaky = t.status === "passed" && e.attempts > 1 && e.attemptFailures.length > 0;
  // Bun's JUnit gives a helper-defined test the helper's line under the test file's name.
  const line = e.viaHelper ? undefined : (t.line ?? e.line);
  return enrichedEntry(
    t,
    cleanEventName(e.name),
    line,
    Math.max(0, e.attempts - 1),
    flaky,
    flaky || t.status === "failed" ? e.attemptFailures : [],
  );
}

/** A planned file Bun's JUnit does not list: the rule of {@link missingFile} that matched, and its entry. */
interface MissingFile {
  kind: "bailed" | "load-error" | "unregistered" | "empty";
  entry: TestResult;
  /** The message of the file's found tests, all `never-started`. */
  why: string;
}

/** Why a planned file Bun's JUnit does not list did not run, first match wins (docs/reports.md, "Verdict rules"). */
function missingFile(
  ev: ShardEvidence,
  file: string,
  left: readonly EventTest[],
  run: { code: number; bailed: boolean; exitExplained: boolean },
): MissingFile {
  const loose = (ev.events?.looseErrors ?? []).some((e) => e.file === file);
  if (run.bailed && !loose) {
    const why = "never started: --bail stopped the run after a failure";
    return { kind: "bailed", entry: synthetic(file, "never-started", { type: "never-started", message: why }), why };
  }
  if (loose || left.length > 0 || (run.code !== 0 && !run.exitExplained))
    return { kind: "load-error", entry: loadFailure(ev, file), why: "never started: the file failed to load" };
  if (run.code !== 0) {
    // Bun sends no event for an unresolvable import either: never passed on that doubt.
    const message = `no tests found, or the file failed to load (see ${ev.logPath ?? "the log"})`;
    return { kind: "unregistered", entry: synthetic(file, "failed", { type: "no-tests", message }), why: "" };
  }
  return { kind: "empty", entry: emptyFile(ev, file), why: "" };
}

/** The entry of a found test no testcase took, first match wins (docs/reports.md, "Hooks, `.only`, `--bail`"). */
function unreportedEntry(
  e: EventTest,
  scopes: readonly FailedScope[],
  bailed: boolean,
): { entry: TestResult; underFailedHook: boolean } {
  if (e.state === "ended" && e.status) return { entry: fromEvent(e, e.status), underFailedHook: false };
  if (e.state === "running") {
    // Under --bail a concurrent test still running when a sibling failed is dropped by Bun's JUnit.
    const message = bailed
      ? "stopped while running: --bail ended the run after a failure"
      : "started, but Bun's JUnit report has no entry for it";
    return { entry: fromEvent(e, "crashed", { type: "crash", message }), underFailedHook: false };
  }
  const scope = scopes.find((s) => e.name.startsWith(s.prefix));
  if (scope) {
    // Bun never ran it: neither passed nor failed.
    const message = `its beforeAll hook failed: ${scope.failure.message}`;
    return { entry: fromEvent(e, "never-started", { type: "never-started", message }), underFailedHook: true };
  }
  if (bailed) {
    const message = "never started: --bail stopped the run after a failure";
    return { entry: fromEvent(e, "never-started", { type: "never-started", message }), underFailedHook: false };
  }
  // Bun ran other tests of this file and left this one out: `.only` elsewhere.
  const message = "not run: another test of the file is marked .only";
  return { entry: fromEvent(e, "skipped", { type: "not-selected", message }), underFailedHook: false };
}

/** The events' errors outside tests of `file`, one per messageless failed hook; null unless the counts match. */
function hookErrorsOf(ev: ShardEvidence, file: string, entries: readonly TestResult[]): Failure[] | null {
  const bare = entries.filter((t) => isHook(t) && t.status === "failed" && !t.failure?.message).length;
  if (bare === 0) return null;
  const loose = (ev.events?.looseErrors ?? []).filter((e) => e.file === file);
  return loose.length === bare ? loose.map((e) => ({ type: "failure", errorName: e.type, message: e.message })) : null;
}

/**
 * A JUnit entry with what its events add (name, line, retries, flakiness, attempts), updated in place, not
 * copied (bench/README.md); only a dropped helper line takes a new object.
 */
function enrichedEntry(
  t: TestResult,
  name: string,
  line: number | undefined,
  retries: number,
  flaky: boolean,
  attemptFailures: TestResult["attemptFailures"],
): TestResult {
  let out = t;
  if (line === undefined && t.line !== undefined) {
    const { line: _helperLine, ...rest } = t;
    out = rest;
  }
  out.name = name;
  out.retries = retries;
  out.flaky = flaky;
  out.attemptFailures = attemptFailures;
  if (line !== undefined) out.line = line;
  return out;
}

const NOT_FAILING = new Set(["passed", "skipped", "todo"]);

/** What {@link shardVerdict} needs besides the entries: files Bun's JUnit left out, and why tests did not run. */
interface Gaps {
  /** Planned files Bun's JUnit does not list. */
  missing: string[];
  /** Of those, files of an exit-1 shard that registered no test. */
  unregistered: string[];
  /** Found tests never started because a beforeAll of theirs failed. */
  underFailedHooks: number;
  bailed: boolean;
}

/** Status and reason of a shard that ended normally; a failed shard gets a failing synthetic entry if it lacks one. */
function shardVerdict(
  ev: ShardEvidence,
  code: number,
  tests: TestResult[],
  gaps: Gaps,
): { status: ShardStatus; reason: string } {
  const { missing, unregistered, bailed } = gaps;
  const anyFailed = tests.some((t) => !NOT_FAILING.has(t.status));
  const allSkipped = tests.length > 0 && tests.every((t) => t.status === "skipped" || t.status === "todo");
  if (code === 1 && ev.nameFilter && missing.length === 0 && allSkipped) {
    // Exit 1 here is Bun's "no test matched": not judged (docs/reports.md).
    const coverage = ev.coverageThreshold ? "; coverage not judged where no test ran" : "";
    return { status: "passed", reason: `no test in this shard matches the -t filter (all skipped)${coverage}` };
  }
  if (code === 0 && !anyFailed) {
    const reason = missing.length > 0 ? `${passedReason(tests)}; ${emptyFilesNote(ev, missing)}` : passedReason(tests);
    return { status: "passed", reason };
  }
  if (code === 0 || code === 1) {
    // A file without tests in a batch: its hint must survive beside the batch's failures.
    const noTestFiles = tests.filter((t) => t.status === "failed" && t.failure?.type === "no-tests").map((t) => t.file);
    const empty = noTestFiles.filter((f) => !unregistered.includes(f));
    const failedTests = tests.filter((t) => t.status === "failed").length - noTestFiles.length;
    const loose = ev.events?.looseErrors[0]?.message;
    // Bun's one other exit 1 after a complete all-passed run: the coverage threshold (exec/coverage.ts).
    const coverage =
      code === 1 &&
      !anyFailed &&
      loose === undefined &&
      ev.finishedNormally === true &&
      ev.coverageThreshold !== undefined;
    const notes = [
      ...(failedTests > 0 ? [`${count(failedTests, "test")} failed`] : []),
      ...(gaps.underFailedHooks > 0
        ? [`${count(gaps.underFailedHooks, "test")} never started (a beforeAll hook failed)`]
        : []),
      ...(empty.length > 0 ? [emptyFilesNote(ev, empty)] : []),
      ...(unregistered.length > 0
        ? [`no test registered in ${unregistered.join(", ")} (no tests, or a load error: see the log)`]
        : []),
    ];
    let reason =
      notes.join("; ") ||
      (anyFailed
        ? "not every test ran"
        : coverage
          ? `coverage below the project's ${ev.coverageThreshold} (bun test exited 1 with every test passed and no ` +
            `error between tests)`
          : "bun test exited 1 though no test failed (an error between tests)");
    if (bailed) reason += "; --bail stopped the run";
    if (!anyFailed) {
      // CI tools count testcases: a failed shard must show a failing one.
      tests.push(
        synthetic(ev.files[0]!, "failed", {
          type: coverage ? "coverage-threshold" : "error-between-tests",
          message: loose ?? reason,
        }),
      );
    }
    return { status: "failed", reason };
  }
  const reason = `exited with code ${code}`;
  tests.push(synthetic(ev.files[0]!, "crashed", { type: "crash", message: reason }));
  return { status: "crashed", reason };
}

/** "all tests passed", or, when no test ran, what they were: "all 3 tests skipped", "all 2 tests todo". */
function passedReason(tests: readonly TestResult[]): string {
  const real = tests.filter((t) => !t.synthetic);
  if (real.some((t) => t.status === "passed")) return "all tests passed";
  const skipped = real.filter((t) => t.status === "skipped").length;
  const todo = real.filter((t) => t.status === "todo").length;
  if (skipped > 0 && todo === 0) return `all ${count(skipped, "test")} skipped`;
  if (todo > 0 && skipped === 0) return `all ${count(todo, "test")} todo`;
  if (skipped > 0 && todo > 0) return `no test ran: ${skipped} skipped, ${todo} todo`;
  return "all tests passed";
}
