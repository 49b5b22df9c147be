/**
 * JUnit XML writer: a {@link RunReport} → one document valid against docs/schemas/junit-10-extended.xsd that the CI
 * consumers of docs/ci.md read alike. The layout rules and why: docs/reports.md, "JUnit XML".
 */
import type { FailureKind, RunReport, ShardResult, TestResult } from "../results/report-model.ts";
import { standInsFor, WHOLE_FILE } from "../results/verdict.ts";
import { BATCH_CHARS } from "./json-stream.ts";
import { capText, xmlAttr, xmlSafe, xmlText } from "./sanitize.ts";

/** Default cap for a failure's message and details text, in bytes of UTF-8. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;

/** Options of {@link renderJUnit}. */
export interface JUnitOptions {
  /** Bytes (UTF-8, sanitized) kept of each failure message and body: the tail, the cut naming the shard's log. */
  maxOutputBytes?: number;
}

/** Name of the testcase that stands for a whole file without per-test data (the verdict's own name). */
export const WHOLE_FILE_TESTCASE = WHOLE_FILE;

/** One child element of a testcase, as the table in docs/reports.md maps our statuses. */
interface Outcome {
  element: "failure" | "error" | "skipped" | "flakyFailure";
  type?: string;
  message?: string;
  body?: string;
}

/**
 * The report as a JUnit XML document ({@link junitChunks} joined); statuses map as docs/reports.md's table, all text
 * sanitized (sanitize.ts). Pure; does not validate the report. @throws RangeError for a bad `maxOutputBytes`
 */
export function renderJUnit(report: RunReport, options: JUnitOptions = {}): string {
  return [...junitChunks(report, options)].join("");
}

/**
 * {@link renderJUnit} in pieces (a suite's start tag, then its testcases in batches), so a writer can stream it
 * without holding it whole; counts come from a first pass, as attributes precede the testcases. The report must
 * not change while the generator runs. @throws RangeError (on the first pull) for a bad `maxOutputBytes`
 */
export function* junitChunks(report: RunReport, options: JUnitOptions = {}): Generator<string, void, undefined> {
  const maxBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`maxOutputBytes must be a non-negative integer, got ${maxBytes}`);
  }

  const suites = groupByFile(report.shards);
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0 };
  for (const suite of suites.values()) {
    for (const test of suite.tests) countInto(totals, test);
  }
  const rootAttrs = attrs({
    // A slice says so where every consumer shows it (<testsuites> has no properties in the XSD).
    name: report.slice ? `shardguard slice ${report.slice.index}/${report.slice.count}` : "shardguard",
    tests: totals.tests,
    failures: totals.failures,
    errors: totals.errors,
    skipped: totals.skipped,
    time: formatSeconds(report.durationMs),
    timestamp: report.startedAt,
  });
  yield `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites${rootAttrs}>\n`;

  const sliceOf = new Map((report.plan?.shards ?? []).flatMap((s) => s.files.map((f) => [f, s.slice] as const)));
  for (const [file, { tests, shards }] of suites) {
    const counts = { tests: 0, failures: 0, errors: 0, skipped: 0 };
    let timeMs = 0;
    let startedAt: string | undefined;
    for (let i = 0; i < tests.length; i++) {
      countInto(counts, tests[i]!);
      timeMs += tests[i]!.durationMs;
      const started = shards[i]!.startedAt;
      if (started !== null && (startedAt === undefined || started < startedAt)) startedAt = started;
    }
    yield `  <testsuite${attrs({
      name: file,
      tests: counts.tests,
      failures: counts.failures,
      errors: counts.errors,
      skipped: counts.skipped,
      time: formatSeconds(timeMs),
      timestamp: startedAt ?? report.startedAt,
      file,
    })}>\n${suiteProperties(report, sliceOf.get(file))}`;
    const names = uniqueNames(tests);
    // The attributes every testcase of the suite shares, escaped once.
    const fileAttr = xmlAttr(String(file));
    const fileAttrs = ` classname="${fileAttr}" file="${fileAttr}"`;
    // Testcases joined in batches: one string per batch to encode instead of one per testcase.
    let batch: string[] = [];
    let chars = 0;
    for (let i = 0; i < tests.length; i++) {
      const testcase = renderTestcase(tests[i]!, shards[i]!, names[i]!, fileAttrs, maxBytes);
      batch.push(testcase);
      chars += testcase.length;
      if (batch.length === TESTCASE_BATCH || chars >= BATCH_CHARS) {
        yield batch.join("");
        batch = [];
        chars = 0;
      }
    }
    yield `${batch.join("")}  </testsuite>\n`;
  }
  yield "</testsuites>\n";
}

/**
 * Adds one testcase to suite or root counts: which element its status yields (outcomesOf; flaky passes count as
 * passes).
 */
function countInto(
  counts: { tests: number; failures: number; errors: number; skipped: number },
  test: TestResult,
): void {
  counts.tests += 1;
  switch (test.status) {
    case "failed":
      counts.failures += 1;
      break;
    case "timed-out":
    case "crashed":
    case "never-started":
      counts.errors += 1;
      break;
    case "skipped":
    case "todo":
    case "skipped-by-diff":
      counts.skipped += 1;
      break;
    case "passed":
      break;
  }
}

/** `<properties>` of a suite in a sliced, merged or rerun report (docs/reports.md, "JUnit XML"); "" for a plain run. */
function suiteProperties(report: RunReport, slice: number | undefined): string {
  const props: [string, string][] = [];
  if (report.plan) {
    if (slice !== undefined) props.push(["shardguard.slice", `${slice}/${report.plan.slices}`]);
    props.push(["shardguard.plan-hash", report.plan.hash]);
  }
  if (report.rerunOf) props.push(["shardguard.rerun-of", report.rerunOf.runId]);
  if (props.length === 0) return "";
  return (
    `    <properties>\n${props.map(([name, value]) => `      <property${attrs({ name, value })}/>\n`).join("")} ` +
    `   </properties>\n`
  );
}

/** ms → seconds with exactly 3 decimals, "0.000" for non-finite or negative; capped below toFixed's exponent form. */
export function formatSeconds(ms: number): string {
  // Well under half a millisecond is "0.000" without toFixed's cost (the margin: toFixed rounds 0.0005 s up).
  if (ms >= 0 && ms < 0.49) return "0.000";
  if (!Number.isFinite(ms) || ms < 0) return "0.000";
  return (Math.min(ms, 1e15) / 1000).toFixed(3);
}

/** A file's testcases in report order, each with the shard it ran in (parallel arrays: no object per test). */
interface Suite {
  tests: TestResult[];
  shards: ShardResult[];
}

/** Test entries by file, in order of first appearance; a planned file without entries gets its stand-ins. */
function groupByFile(shards: readonly ShardResult[]): Map<string, Suite> {
  const byFile = new Map<string, Suite>();
  const add = (test: TestResult, shard: ShardResult) => {
    const suite = byFile.get(test.file);
    if (suite === undefined) byFile.set(test.file, { tests: [test], shards: [shard] });
    else {
      suite.tests.push(test);
      suite.shards.push(shard);
    }
  };
  for (const shard of shards) {
    const seen = new Set<string>();
    for (const test of shard.tests) {
      seen.add(test.file);
      add(test, shard);
    }
    for (const test of standInsFor(shard, seen)) add(test, shard);
  }
  return byFile;
}

/** Sanitized names made unique per suite (GitLab merges equal ones): a repeat gets the first free " (n)", n ≥ 2. */
function uniqueNames(tests: readonly TestResult[]): string[] {
  const safe = tests.map((t) => xmlSafe(t.name));
  const taken = new Set(safe);
  // No repeats (the usual case): every name is its own.
  if (taken.size === safe.length) return safe;
  const used = new Set<string>();
  return safe.map((base) => {
    let name = base;
    if (used.has(name)) {
      let n = 2;
      while (taken.has(`${base} (${n})`) || used.has(`${base} (${n})`)) n += 1;
      name = `${base} (${n})`;
    }
    used.add(name);
    return name;
  });
}

/** Testcases rendered into one piece of {@link junitChunks}, unless their text reaches BATCH_CHARS first. */
const TESTCASE_BATCH = 256;

/**
 * A testcase's one `<properties>` element, as Jenkins and GitLab read them: the quarantine mark (docs/history.md)
 * and its cost (docs/cost.md, `cost.usd`, `cost.model`, …); "" when it has neither.
 */
function testcaseProperties(test: TestResult): string {
  const props: [string, string][] = test.quarantined ? [["quarantined", "true"]] : [];
  const cost = test.cost;
  if (cost) {
    props.push(["cost.usd", String(cost.usd)]);
    if (cost.inputTokens !== undefined) props.push(["cost.inputTokens", String(cost.inputTokens)]);
    if (cost.outputTokens !== undefined) props.push(["cost.outputTokens", String(cost.outputTokens)]);
    if (cost.tokens !== undefined) props.push(["cost.tokens", String(cost.tokens)]);
    if (cost.model !== undefined) props.push(["cost.model", cost.model]);
    props.push(["cost.source", cost.source]);
  }
  if (props.length === 0) return "";
  return `      <properties>${props.map(([name, value]) => `<property${attrs({ name, value })}/>`).join("")}</properties>\n`;
}

/** One indented `<testcase>`; `name` is sanitized, `fileAttrs` the suite's escaped ` classname="…" file="…"`. */
function renderTestcase(
  test: TestResult,
  shard: ShardResult,
  name: string,
  fileAttrs: string,
  maxBytes: number,
): string {
  // A line number and a time are digits, signs and points: nothing to escape.
  const line =
    test.line === undefined ? "" : ` line="${typeof test.line === "number" ? test.line : xmlAttr(String(test.line))}"`;
  const open = `    <testcase name="${xmlAttr(name)}"${fileAttrs}${line} time="${formatSeconds(test.durationMs)}"`;
  // A pass without flaky attempts (nearly every testcase) has no children.
  const properties = testcaseProperties(test);
  if (test.status === "passed" && !test.flaky && !properties) return `${open}/>\n`;
  const note = shard.logPath === null ? "no log was written" : `full log: ${shard.logPath}`;
  const cap = (text: string) => capText(xmlSafe(text), maxBytes, note);
  const outcomes = outcomesOf(test, shard);
  const children = outcomes.map((o) => {
    const head = `<${o.element}${attrs({
      type: o.type,
      message: o.message === undefined ? undefined : cap(o.message),
    })}`;
    return o.body === undefined || o.body === ""
      ? `      ${head}/>\n`
      : `      ${head}>${xmlText(cap(o.body))}</${o.element}>\n`;
  });
  if (properties) children.unshift(properties);
  return children.length === 0 ? `${open}/>\n` : `${open}>\n${children.join("")}    </testcase>\n`;
}

/** The docs/reports.md status table. Each status yields elements of one kind only. */
function outcomesOf(test: TestResult, shard: ShardResult): Outcome[] {
  const failure = test.failure;
  const message = failure?.message || shard.reason;
  const error = (type: FailureKind): Outcome[] => [{ element: "error", type, message, body: failure?.details }];
  switch (test.status) {
    case "passed":
      return test.flaky
        ? test.attemptFailures.map((a) => ({
            element: "flakyFailure",
            type: a.errorName ?? a.type,
            message: a.message,
          }))
        : [];
    case "failed":
      // JUnit's `type` is the error's name where Bun gave one (AssertionError), else our kind.
      return [
        { element: "failure", type: failure?.errorName ?? failure?.type ?? "failure", message, body: failure?.details },
      ];
    case "skipped":
      // A reason of shardguard's (an empty file, a test beside a `.only`) says why nothing ran.
      return failure ? [{ element: "skipped", type: failure.type, message }] : [{ element: "skipped" }];
    case "todo":
      return [{ element: "skipped", type: "todo" }];
    case "skipped-by-diff":
      return [{ element: "skipped", type: "skipped-by-diff", message }];
    case "timed-out":
      return error("timeout");
    case "crashed":
      return error("crash");
    case "never-started":
      return error("never-started");
  }
}

/** ` k="v"` for each defined value, values sanitized and escaped. */
function attrs(values: Record<string, string | number | undefined>): string {
  let out = "";
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined) out += ` ${key}="${xmlAttr(String(value))}"`;
  }
  return out;
}
