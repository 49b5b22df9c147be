/**
 * The preload's start count against a shard's events when it did not end normally: which tests started, which
 * was in flight (docs/reports.md, "When the last events are lost"). Events are a prefix of what Bun sent; the
 * count cannot lose a start, so the missing starts are the next tests in run order. Each lost start is taken as
 * a new test, so nothing that may have started is called never-started; nothing here makes a test passed.
 */
import { count, fromEvent, hookEntry, seconds, synthetic } from "./entries.ts";
import type { Failure, FailureKind, TestResult, TestStatus } from "./report-model.ts";
import type { EventTest } from "./verdict-evidence.ts";

/** What {@link readStarts} reads. */
export interface StartFacts {
  /** The shard's event tests, in found order. */
  tests: readonly EventTest[];
  /** The planned files, in the order Bun runs them. */
  files: readonly string[];
  /** Test starts the child preload counted; undefined when unknown. */
  testsStarted: number | undefined;
  /** Planned files with a file mark (a test started there); undefined when unknown. */
  filesStarted: ReadonlySet<string> | undefined;
  /** The events saw two tests run at once. */
  concurrent: boolean;
  /** Bun reached the end of the run (the end mark): nothing was in flight. */
  reachedEnd: boolean;
}

/** Which tests started and which was in flight, by the count and the events together. */
export interface StartReading {
  /** Tests without a `start` event that the count says started (their events were lost). */
  startLost: Set<EventTest>;
  /** Tests in flight when the shard ended: the last one started (with concurrent tests, any without an end). */
  inFlight: Set<EventTest>;
  /** Tests that started and did not end by their events, not in flight: they finished, their outcome is unknown. */
  endLost: Set<EventTest>;
  /** Planned files with starts no received `found` names: how many, null when the count cannot be split. */
  unnamed: Map<string, number | null>;
  /** The file of {@link unnamed} that holds the test in flight; null when a named test (or nothing) was. */
  unnamedInFlight: string | null;
  /** Test starts the preload counted (0 when unknown) and those the events carried. */
  counted: number;
  carried: number;
}

/**
 * A passing `end` without a `start`: Bun sends that only for skipped and todo tests, so a test wrote it
 * (docs/reports.md, "What a test can forge"). It counts as never started.
 */
export function endWithoutStart(t: EventTest): boolean {
  return t.state === "ended" && t.status === "passed" && t.attempts === 0;
}

/** The test has a `start` or `end` event that counts. */
const seen = (t: EventTest) => t.state !== "found" && !endWithoutStart(t);

/** Reads the start count against the events (module comment). */
export function readStarts(facts: StartFacts): StartReading {
  let carried = 0;
  for (const t of facts.tests) carried += t.attempts;
  const counted = facts.testsStarted ?? 0;
  const reading: StartReading = {
    startLost: new Set(),
    inFlight: new Set(),
    endLost: new Set(),
    unnamed: new Map(),
    unnamedInFlight: null,
    counted,
    carried,
  };
  const front = frontierOf(facts);
  const lost = Math.max(0, counted - carried);
  const running = facts.tests.filter((t) => t.state === "running");
  const { files, filesStarted } = facts;
  const later = filesStarted === undefined ? [] : files.filter((file, i) => i > front.at && filesStarted.has(file));
  if (later.length > 0) startsInLaterFiles(reading, front.candidates, running, later, lost, facts.reachedEnd);
  else startsInFrontier(reading, front, running, lost, facts);
  return reading;
}

/** Where the lost starts can be: the last file whose `found` events arrived and its tests after the last seen. */
interface Frontier {
  /** Its plan index; -1 when no test was found. */
  at: number;
  file: string | undefined;
  /** An event of a test of it other than `found` arrived: its plan arrived whole. */
  ran: boolean;
  /** It may hold lost starts: a test of it started by its events or its file mark (or marks are unknown). */
  mayStart: boolean;
  /** Its tests after the last test the events saw start or end, in run order. */
  candidates: EventTest[];
}

function frontierOf({ tests, files, filesStarted }: StartFacts): Frontier {
  const planIndex = new Map(files.map((file, i) => [file, i]));
  const ordered = tests
    .map((t, i) => ({ t, at: planIndex.get(t.file) ?? -1, key: t.runOrder ?? i }))
    .filter((e) => e.at >= 0)
    .sort((a, b) => a.key - b.key);
  let at = -1;
  let lastSeen = -1;
  ordered.forEach((e, i) => {
    if (e.at > at) at = e.at;
    if (seen(e.t)) lastSeen = i;
  });
  const file = at >= 0 ? files[at] : undefined;
  const ran = ordered.some((e) => e.at === at && seen(e.t));
  const mayStart = file !== undefined && (ran || filesStarted?.has(file) !== false);
  const after = mayStart ? ordered.slice(lastSeen + 1).filter((e) => e.at === at && !seen(e.t)) : [];
  return { at, file, ran, mayStart, candidates: after.map((e) => e.t) };
}

/** A file after the frontier started: the frontier had finished, the test in flight is in the last such file. */
function startsInLaterFiles(
  reading: StartReading,
  candidates: readonly EventTest[],
  running: readonly EventTest[],
  later: readonly string[],
  lost: number,
  reachedEnd: boolean,
): void {
  // Every test of the frontier that could start did.
  for (const t of candidates) {
    reading.startLost.add(t);
    reading.endLost.add(t);
  }
  for (const t of running) reading.endLost.add(t);
  const left = Math.max(0, lost - candidates.length);
  for (const file of later) reading.unnamed.set(file, later.length === 1 ? Math.max(1, left) : null);
  if (!reachedEnd) reading.unnamedInFlight = later[later.length - 1]!;
}

/** The lost starts are the frontier's next tests; the last of them was in flight. */
function startsInFrontier(
  reading: StartReading,
  front: Frontier,
  running: readonly EventTest[],
  lost: number,
  facts: StartFacts,
): void {
  const placed = front.candidates.slice(0, Math.min(lost, front.candidates.length));
  for (const t of placed) reading.startLost.add(t);
  const rest = lost - placed.length;
  // Starts beyond the tests named in a file whose plan may be cut short (no later event of it arrived).
  const unnamedHere = rest > 0 && front.mayStart && !front.ran;
  if (unnamedHere) reading.unnamed.set(front.file!, rest);
  const last = unnamedHere ? undefined : placed[placed.length - 1];
  // Tests started before the last one: still running only when tests ran concurrently.
  const before = [...running, ...(last === undefined ? placed : placed.slice(0, -1))];
  const laterStart = last !== undefined || unnamedHere;
  for (const t of before) (laterStart && !facts.concurrent ? reading.endLost : reading.inFlight).add(t);
  if (last !== undefined) reading.inFlight.add(last);
  if (unnamedHere) reading.unnamedInFlight = front.file!;
  if (facts.reachedEnd) {
    for (const t of reading.inFlight) reading.endLost.add(t);
    reading.inFlight.clear();
    reading.unnamedInFlight = null;
  }
}

/** "the child preload counted 41 test starts, the events carried 34", for messages. */
const countedText = (r: StartReading) =>
  `the child preload counted ${r.counted} test starts, the events carried ${r.carried}`;

/** The ending of a shard as {@link startedEntry} needs it (endings.ts ENDINGS). */
export interface EndingFacts {
  status: TestStatus;
  failure: FailureKind;
  reachedEnd: boolean;
  reason: string;
}

/**
 * The entry of a started test without an `end`: in flight (the ending's status), or finished with its outcome
 * unknown (`crashed`, or the ending's status under an end mark). Undefined for any other test.
 */
export function startedEntry(t: EventTest, reading: StartReading, ending: EndingFacts): TestResult | undefined {
  const inFlight = reading.inFlight.has(t);
  if (!inFlight && !reading.endLost.has(t)) return undefined;
  const counted = countedText(reading);
  const lostStart = reading.startLost.has(t);
  const details = t.failure ? { details: t.failure.message } : {};
  if (inFlight) {
    const ran = t.runningForMs !== undefined ? ` after running ${seconds(t.runningForMs)}` : "";
    const order = "Bun starts tests in the order they are declared";
    const message = lostStart
      ? `in flight when the shard ended (its start event was lost: ${counted}, and ${order})`
      : reading.inFlight.size > 1
        ? `in flight when the shard ended${ran}, or its end event was lost (tests ran concurrently)`
        : `in flight when the shard ended${ran}`;
    return fromEvent(t, ending.status, { type: ending.failure, message: `${message}: ${ending.reason}`, ...details });
  }
  if (ending.reachedEnd) {
    const what = lostStart ? `its start and end events never arrived (${counted})` : "its end event never arrived";
    return fromEvent(t, ending.status, { type: ending.failure, message: `${what}: ${ending.reason}`, ...details });
  }
  const what = lostStart
    ? `it started (${counted}), and its start and end events were lost when the process died`
    : "it started, and its end event was lost when the process died (a later test had started)";
  const message = `${what}: its outcome is unknown (${ending.reason})`;
  return fromEvent(t, "crashed", { type: "crash", message, ...details });
}

/** A passing entry from events claiming more starts than counted: forged (docs/reports.md), so not a pass. */
export function untrustedPass(t: EventTest, reading: StartReading): TestResult {
  const message =
    `its pass came from inspector events that carried more test starts than the child preload counted ` +
    `(${countedText(reading)}): events were forged, so the pass is not trusted`;
  return fromEvent(t, "crashed", { type: "crash", message });
}

/**
 * The entry for the starts in `file` no received `found` names: the whole file when none was found, else one beside
 * them; the ending's status when the one in flight is among them, else `crashed`.
 */
export function unnamedEntry(
  file: string,
  reading: StartReading,
  ending: EndingFacts,
  wholeFile: boolean,
  ms: number,
): TestResult {
  const n = reading.unnamed.get(file);
  const starts = n == null ? "tests started here (its file mark)" : `${count(n, "test start")} here`;
  const inFlight = reading.unnamedInFlight === file;
  const where = inFlight ? "; the test in flight when the shard ended is among them" : "; they finished";
  const unknown = "which tests they were and how they ended is unknown";
  const names = `that no received inspector event names (${countedText(reading)})`;
  const message = `${starts} ${names}: ${unknown}${where} (${ending.reason})`;
  const own = inFlight || ending.reachedEnd;
  const failure: Failure = { type: own ? ending.failure : "crash", message };
  const status = own ? ending.status : "crashed";
  const time = inFlight ? ms : 0;
  if (wholeFile) return synthetic(file, status, failure, time);
  return hookEntry(file, "(tests whose events were lost)", status, failure, time);
}
