/**
 * Bun 1.3.x lists each attempt of a retried test as its own testcase (bun-capabilities.ts); this folds them into
 * one entry as 1.4 has it. Counted by the events' starts, else the retry count, else (exit 0) each failed
 * testcase before one of the same test; otherwise nothing is folded, so a failure never turns into a pass.
 */
import type { BunJUnitFile } from "./bun-junit.ts";
import type { EventTest } from "./verdict-evidence.ts";
import type { TestResult } from "./report-model.ts";

/** What {@link foldJUnitAttempts} may count on. */
export interface AttemptHints {
  /** The shard's event tests (null without events). */
  events: readonly EventTest[] | null;
  /** Attempts per test allowed by the run's retry count (N + 1), or null when unknown. */
  maxAttempts: number | null;
  /** True when Bun exited 0. */
  exitedZero: boolean;
}

/** Control characters: Bun's JUnit and events may disagree on them (from-junit.ts). */
const CONTROLS_ALL = /[\u0000-\u001f\u007f]/g;
const key = (name: string) => name.replace(CONTROLS_ALL, "");

const sameTest = (a: TestResult, b: TestResult) => a.name === b.name && a.line === b.line && a.file === b.file;

/** A hook's testcase (no line): never retried by Bun. */
const isHook = (t: TestResult) => t.line === undefined;

/** `junit` with each test's attempts folded into its final entry (reused); unrepeated files come back as they were. */
export function foldJUnitAttempts(junit: BunJUnitFile[], hints: AttemptHints): BunJUnitFile[] {
  return junit.map((f) => {
    let repeated = false;
    for (let i = 1; i < f.tests.length && !repeated; i++) repeated = sameTest(f.tests[i - 1]!, f.tests[i]!);
    return repeated ? { file: f.file, tests: foldFile(f, hints) } : f;
  });
}

function foldFile(f: BunJUnitFile, hints: AttemptHints): TestResult[] {
  // The file's event attempt counts by name, in event order.
  const counts = new Map<string, number[]>();
  for (const e of hints.events ?? []) {
    if (e.file !== f.file) continue;
    const list = counts.get(key(e.name));
    if (list) list.push(e.attempts);
    else counts.set(key(e.name), [e.attempts]);
  }
  const out: TestResult[] = [];
  const tests = f.tests;
  for (let i = 0; i < tests.length; ) {
    const first = tests[i]!;
    if (isHook(first)) {
      out.push(first);
      i++;
      continue;
    }
    const known = counts.get(key(first.name))?.shift();
    let n = 1;
    if (known !== undefined && known > 1) {
      while (n < known && i + n < tests.length && sameTest(first, tests[i + n]!)) n++;
    } else if (known === undefined && (hints.maxAttempts !== null || hints.exitedZero)) {
      const max = hints.maxAttempts ?? Number.POSITIVE_INFINITY;
      while (n < max && i + n < tests.length && tests[i + n - 1]!.status === "failed" && sameTest(first, tests[i + n]!))
        n++;
    }
    out.push(n === 1 ? first : folded(tests.slice(i, i + n)));
    i += n;
  }
  return out;
}

/** The final attempt, carrying the failed ones before it. */
function folded(attempts: TestResult[]): TestResult {
  const last = attempts[attempts.length - 1]!;
  const failures = attempts.slice(0, -1).filter((t) => t.status === "failed");
  last.retries = attempts.length - 1;
  last.flaky = last.status === "passed" && failures.length > 0;
  last.attemptFailures = failures.map((t) => ({
    type: t.failure?.type ?? "failure",
    ...(t.failure?.errorName !== undefined ? { errorName: t.failure.errorName } : {}),
    message: t.failure?.message || "attempt failed (Bun's JUnit gives no message)",
  }));
  return last;
}
