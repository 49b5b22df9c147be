/**
 * Secrets out of reports (docs/configuration.md, "Redaction"): a failure message can carry an API key into a
 * JUnit CI publishes. Only exact occurrences (and the encodings below) are found, not a value split by a wrap.
 */
import type { RunReport, ShardResult, TestResult } from "./report-model.ts";

/** Name globs that mark an environment variable as secret (docs/configuration.md, redaction). */
export const SECRET_NAME_PATTERNS: readonly string[] = ["*_KEY", "*_TOKEN", "*SECRET*", "*PASSWORD*"];

/** Shortest value (in Unicode code points) that gets redacted. */
export const MIN_SECRET_LENGTH = 8;

/** Options of {@link makeRedactor}. */
export interface RedactOptions {
  /** More variable names or globs to treat as secret, matched like {@link SECRET_NAME_PATTERNS}. */
  extraNames?: readonly string[];
}

/** Replaces secret values in a text; `names` (sorted) say what is hidden without showing it. */
export type Redactor = ((text: string) => string) & { readonly names: readonly string[] };

/**
 * Compiles one name glob to an anchored, case-insensitive RegExp.
 * @throws Error (one line) when the glob is empty or holds `=`, NUL or whitespace (never in a variable name).
 */
export function compileNameGlob(glob: string): RegExp {
  if (glob === "" || /[=\s\0]/.test(glob)) {
    throw new Error(
      `invalid secret variable name ${JSON.stringify(glob)}: use a name or glob such as MY_API_KEY or AWS_*`,
    );
  }
  const body = [...glob]
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\/-]/g, "\\$&")))
    .join("");
  return new RegExp(`^${body}$`, "i");
}

/**
 * True when `name` matches one of {@link SECRET_NAME_PATTERNS} or `extra`.
 * @throws Error when one of `extra` is not a valid glob (see {@link compileNameGlob}).
 */
export function isSecretName(name: string, extra: readonly string[] = []): boolean {
  return [...SECRET_NAME_PATTERNS, ...extra].some((glob) => compileNameGlob(glob).test(name));
}

/** One value to hide and the variable it came from. */
interface Secret {
  name: string;
  value: string;
}

/** A stretch of text covered by one or more overlapping secret values. */
interface Hit {
  start: number;
  end: number;
  names: string[];
}

/**
 * Builds a never-throwing redactor from an environment (usually the shard children's). Each maximal run of
 * overlapping occurrences becomes one marker, `[redacted:NAME]` or `[redacted:A+B]`, so no fragment survives.
 * @throws Error when an extra name is not a valid glob (see {@link compileNameGlob}).
 */
export function makeRedactor(env: Record<string, string | undefined>, options: RedactOptions = {}): Redactor {
  const globs = [...SECRET_NAME_PATTERNS, ...(options.extraNames ?? [])].map(compileNameGlob);
  const byValue = new Map<string, string>();
  for (const name of Object.keys(env).sort()) {
    const raw = env[name];
    if (raw === undefined || !globs.some((g) => g.test(name))) continue;
    // Trimmed too (a token read from a file ends in a newline), JSON-escaped and percent-encoded, as
    // secrets reach messages; the length rule is the value's own.
    const values = [raw, raw.trim()].filter((v) => [...v].length >= MIN_SECRET_LENGTH);
    const forms = values.flatMap((v) => [v, JSON.stringify(v).slice(1, -1), encodeURIComponent(v)]);
    for (const value of new Set(forms)) {
      if (!byValue.has(value)) byValue.set(value, name);
    }
  }
  // Longest first: at one position the longest value claims the text.
  const secrets: Secret[] = [...byValue]
    .map(([value, name]) => ({ name, value }))
    .sort((a, b) => b.value.length - a.value.length);
  const names = [...new Set(secrets.map((s) => s.name))].sort();

  // A text shorter than every value holds none (most test names).
  const shortest = secrets.length === 0 ? Infinity : secrets[secrets.length - 1]!.value.length;
  const redact = (text: string): string => {
    if (text.length < shortest) return text;
    const hits: Hit[] = [];
    for (const { name, value } of secrets) {
      for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) {
        hits.push({ start: at, end: at + value.length, names: [name] });
      }
    }
    if (hits.length === 0) return text;
    hits.sort((a, b) => a.start - b.start || b.end - a.end);
    const runs: Hit[] = [];
    for (const hit of hits) {
      const last = runs[runs.length - 1];
      if (last !== undefined && hit.start < last.end) {
        // A hit inside the run is explained by it; one that sticks out extends it.
        if (hit.end > last.end) {
          last.end = hit.end;
          for (const n of hit.names) if (!last.names.includes(n)) last.names.push(n);
        }
      } else {
        runs.push({ ...hit, names: [...hit.names] });
      }
    }
    let out = "";
    let pos = 0;
    for (const run of runs) {
      out += `${text.slice(pos, run.start)}[redacted:${run.names.join("+")}]`;
      pos = run.end;
    }
    return out + text.slice(pos);
  };
  return Object.assign(redact, { names });
}

/**
 * A copy of `report` with `redact` applied to every string a test can put text into (docs/reports.md,
 * "Redaction"); paths, ids and settings stay so consumers find files. A new test-writable field must be added
 * here. Unchanged parts are the input's own objects, not copies (bench/README.md).
 */
export function redactReport(report: RunReport, redact: (text: string) => string): RunReport {
  return {
    ...report,
    sweeps: {
      staleRuns: commands(report.sweeps.staleRuns, redact),
      endOfRun: commands(report.sweeps.endOfRun, redact),
    },
    shards: report.shards.map((shard) => redactShard(shard, redact)),
  };
}

const commands = <T extends { command: string }>(list: readonly T[], redact: (text: string) => string): T[] =>
  list.map((p) => {
    const command = redact(p.command);
    return command === p.command ? p : { ...p, command };
  });

/** One shard's part of {@link redactReport}; the shard itself when nothing changed. */
export function redactShard(shard: ShardResult, redact: (text: string) => string): ShardResult {
  const reason = redact(shard.reason);
  const notes = shard.notes?.map(redact);
  const leftovers = commands(shard.leftovers, redact);
  let tests: TestResult[] | null = null;
  for (let i = 0; i < shard.tests.length; i++) {
    const test = shard.tests[i]!;
    const safe = redactTest(test, redact);
    if (safe !== test) (tests ??= shard.tests.slice())[i] = safe;
  }
  const sameNotes = notes === undefined || notes.every((n, i) => n === shard.notes![i]);
  const same =
    reason === shard.reason && sameNotes && leftovers.every((p, i) => p === shard.leftovers[i]) && tests === null;
  return same ? shard : { ...shard, reason, ...(notes ? { notes } : {}), leftovers, tests: tests ?? shard.tests };
}

/** One test entry with `redact` applied to its test-written texts; the entry itself when nothing changed. */
function redactTest(test: TestResult, redact: (text: string) => string): TestResult {
  const name = redact(test.name);
  let changed = name !== test.name;
  let attemptFailures = test.attemptFailures;
  for (let i = 0; i < test.attemptFailures.length; i++) {
    const a = test.attemptFailures[i]!;
    const errorName = a.errorName === undefined ? undefined : redact(a.errorName);
    const message = redact(a.message);
    if (errorName === a.errorName && message === a.message) continue;
    if (attemptFailures === test.attemptFailures) attemptFailures = attemptFailures.slice();
    attemptFailures[i] = { ...a, message };
    if (errorName !== undefined) attemptFailures[i]!.errorName = errorName;
    changed = true;
  }
  let failure = test.failure;
  if (failure !== undefined) {
    const errorName = failure.errorName === undefined ? undefined : redact(failure.errorName);
    const message = redact(failure.message);
    const details = failure.details === undefined ? undefined : redact(failure.details);
    if (errorName !== failure.errorName || message !== failure.message || details !== failure.details) {
      changed = true;
      failure = { ...failure, message };
      if (errorName !== undefined) failure.errorName = errorName;
      if (details !== undefined) failure.details = details;
    }
  }
  if (!changed) return test;
  const out: TestResult = { ...test, name, attemptFailures };
  if (failure !== undefined) out.failure = failure;
  return out;
}
