/** Builders of test entries shared by verdict.ts and from-junit.ts. Pure; durations in ms. */
import type { Failure, ShardResult, TestResult, TestStatus } from "./report-model.ts";
import { cleanEventName } from "./text.ts";
import type { EventTest, ShardEvidence } from "./verdict-evidence.ts";

/** Name used for the one synthetic testcase of a file without per-test data. */
export const WHOLE_FILE = "(whole file)";

/** A shard result without its verdict fields. */
export type ShardResultWithoutVerdict = Omit<ShardResult, "status" | "reason" | "testSource" | "tests">;

/** `1.5 s`, for reasons and messages. */
export { seconds } from "../util/format.ts";

/** `1 test`, `2 tests`. */
export const count = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The one "(whole file)" entry of a file without per-test data. */
export function synthetic(file: string, status: TestStatus, failure?: Failure, durationMs = 0): TestResult {
  return {
    name: WHOLE_FILE,
    file,
    status,
    durationMs: Math.max(0, durationMs),
    ...(failure ? { failure } : {}),
    retries: 0,
    flaky: false,
    attemptFailures: [],
    synthetic: true,
  };
}

/** An entry for a hook or code outside tests, beside the file's tests (not synthetic), e.g. "off > beforeAll hook". */
export function hookEntry(
  file: string,
  name: string,
  status: TestStatus,
  failure: Failure,
  durationMs: number,
): TestResult {
  return { ...synthetic(file, status, failure, durationMs), name, synthetic: false };
}

/** A failed empty file's hint names `empty-files`, not `--pass-with-no-tests` (Bun exits 0 for an empty file). */
export const EMPTY_FILES_HINT = 'empty-files = "fail"; --empty-files pass allows it';

/** What the empty-file rule reads of a shard's evidence. */
type EmptyRule = Pick<ShardEvidence, "emptyFiles" | "passWithNoTests">;

/** Whether a file that registers no tests passes: the `empty-files` setting, or `--pass-with-no-tests` under "fail". */
export function emptyFilesPass(ev: EmptyRule): boolean {
  return ev.emptyFiles !== "fail" || ev.passWithNoTests;
}

/** The "(whole file)" entry of an empty file at a normal end: `skipped`, `failed` under `empty-files = "fail"`. */
export function emptyFile(ev: EmptyRule, file: string, why?: string): TestResult {
  const seen = why ? `; ${why}` : "";
  if (!emptyFilesPass(ev)) {
    return synthetic(file, "failed", { type: "no-tests", message: `registers no tests${seen} (${EMPTY_FILES_HINT})` });
  }
  const allowed = ev.emptyFiles === "fail" ? " (--pass-with-no-tests)" : ": an empty file";
  return synthetic(file, "skipped", { type: "no-tests", message: `registers no tests${allowed}${seen}` });
}

/** The reason part naming a shard's empty files, with the hint when they fail. */
export function emptyFilesNote(ev: EmptyRule, files: readonly string[]): string {
  const list = files.join(", ");
  if (!emptyFilesPass(ev)) return `no tests found in ${list} (${EMPTY_FILES_HINT})`;
  const why = ev.emptyFiles === "fail" ? "--pass-with-no-tests" : files.length === 1 ? "an empty file" : "empty files";
  return `no tests in ${list} (${why})`;
}

/** A test entry from its events, with the status the verdict chose. */
export function fromEvent(t: EventTest, status: TestStatus, failure?: Failure): TestResult {
  const flaky = status === "passed" && t.attempts > 1 && t.attemptFailures.length > 0;
  const chosen = failure ?? (status === "failed" ? (t.failure ?? { type: "failure", message: "failed" }) : undefined);
  return {
    name: cleanEventName(t.name),
    file: t.file,
    ...(t.line !== undefined ? { line: t.line } : {}),
    status,
    durationMs: status === "never-started" ? 0 : t.state === "running" ? (t.runningForMs ?? 0) : t.durationMs,
    ...(chosen ? { failure: chosen } : {}),
    retries: Math.max(0, t.attempts - 1),
    flaky,
    attemptFailures: flaky || status !== "passed" ? t.attemptFailures : [],
    synthetic: false,
  };
}

/** The "(whole file)" entry of a file that failed before any test was registered. */
export function loadFailure(ev: ShardEvidence, file: string): TestResult {
  const errors = (ev.events?.looseErrors ?? []).filter(
    (e) => e.file === file || (e.file === null && ev.files.length === 1),
  );
  const message =
    errors[0]?.message ??
    (ev.consoleError
      ? `${ev.consoleError} (from Bun's console output)`
      : `the file failed before any test was registered (see ${ev.logPath ?? "the log"})`);
  return synthetic(file, "failed", { type: "load-error", message });
}
