/**
 * JSON report writer: the run report as our own documented layout
 * (docs/report.schema.json, generated from the zod schema in
 * runner/results/model.ts).
 */
import { RunReportSchema, type RunReport, type TestResult } from "../results/model.ts";
import { stripAnsi } from "./sanitize.ts";

/**
 * Validates `report` against {@link RunReportSchema} (defaults filled in),
 * removes terminal escape sequences from failure texts (`failure.message`,
 * `failure.details`, `attemptFailures[].message`) and returns the report as
 * JSON with 2-space indentation and a trailing newline.
 *
 * Nothing else is changed: JSON can carry any string (controls become
 * `\u00XX`, lone surrogates `\udXXX`), so names and paths stay exactly as the
 * tests wrote them. Colour codes are dropped because readers of failure
 * messages are people and dashboards, not terminals.
 *
 * @throws ZodError when the report does not match the schema.
 */
export function renderJson(report: RunReport): string {
  const valid = RunReportSchema.parse(report);
  const shards = valid.shards.map((shard) => ({ ...shard, tests: shard.tests.map(cleanTest) }));
  return `${JSON.stringify({ ...valid, shards }, null, 2)}\n`;
}

function cleanTest(test: TestResult): TestResult {
  const clean: TestResult = {
    ...test,
    attemptFailures: test.attemptFailures.map((a) => ({ ...a, message: stripAnsi(a.message) })),
  };
  if (test.failure !== undefined) {
    clean.failure = { ...test.failure, message: stripAnsi(test.failure.message) };
    if (test.failure.details !== undefined) clean.failure.details = stripAnsi(test.failure.details);
  }
  return clean;
}
