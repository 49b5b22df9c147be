/** JSON report writer: our own documented layout (docs/report.schema.json, from results/report-model.ts's schema). */
import {
  validReportShell,
  validTest,
  type RunReport,
  type TestCheck,
  type TestResult,
} from "../results/report-model.ts";
import { JsonBatch, jsonWithStreamedArray } from "./json-stream.ts";
import { capText, stripAnsi } from "./sanitize.ts";
import { MAX_TEXT_BYTES } from "../util/text-cap.ts";

/**
 * The report validated, failure texts without terminal escapes and tail-capped (docs/reports.md, "JSON"), as
 * 2-space JSON with a trailing newline. @throws ZodError when the report does not match the schema
 */
export function renderJson(report: RunReport): string {
  return [...jsonChunks(report)].join("");
}

/**
 * {@link renderJson} in pieces, checked part by part (the shell, then each test by `check`), so neither a checked
 * copy nor the text is held whole. @throws ZodError on the pull that reaches a bad part
 */
export function* jsonChunks(report: RunReport, check: TestCheck = validTest): Generator<string, void, undefined> {
  const valid = validReportShell(report);
  const shards = function* () {
    for (let s = 0; s < valid.shards.length; s++) {
      const shard = valid.shards[s]!;
      const note = failureNote(shard.logPath);
      const tests = function* () {
        const batch = new JsonBatch(4);
        for (let t = 0; t < shard.tests.length; t++) {
          const test = cleanTest(check(shard.tests[t]!, s, t), note);
          const full = batch.add(test, entryChars(test));
          if (full !== null) yield full;
        }
        const rest = batch.take();
        if (rest !== null) yield rest;
      };
      yield jsonWithStreamedArray(shard, ["tests"], 2, tests());
    }
  };
  yield* jsonWithStreamedArray(valid, ["shards"], 0, shards());
  yield "\n";
}

/**
 * About how many characters of text a checked entry holds (its name, path and failure texts): what fills a JsonBatch.
 */
export function entryChars(test: TestResult): number {
  let chars = test.name.length + test.file.length;
  if (test.failure !== undefined) chars += test.failure.message.length + (test.failure.details?.length ?? 0);
  for (const a of test.attemptFailures) chars += a.message.length;
  return chars;
}

/** Where a cut failure text is whole: the note of every cut in JSON and CTRF (as in JUnit). */
export function failureNote(logPath: string | null): string {
  return logPath === null ? "no log was written" : `full log: ${logPath}`;
}

/** Failure text as reports show it: without terminal escapes, its tail capped naming the log (as in JUnit). */
export function reportText(text: string, note: string): string {
  return capText(stripAnsi(text), MAX_TEXT_BYTES, note);
}

function cleanTest(test: TestResult, note: string): TestResult {
  // Nothing to clean (nearly every entry): the checked copy as it is.
  if (test.failure === undefined && test.attemptFailures.length === 0) return test;
  const clean: TestResult = {
    ...test,
    attemptFailures: test.attemptFailures.map((a) => ({ ...a, message: reportText(a.message, note) })),
  };
  if (test.failure !== undefined) {
    clean.failure = { ...test.failure, message: reportText(test.failure.message, note) };
    if (test.failure.details !== undefined) clean.failure.details = reportText(test.failure.details, note);
  }
  return clean;
}
