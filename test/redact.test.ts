/**
 * Secret redaction: which variables count, how values are replaced, and
 * which report fields are touched.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { makeSuite, removeSuites, runCli } from "./helpers/cli.ts";
import {
  compileNameGlob,
  isSecretName,
  makeRedactor,
  MIN_SECRET_LENGTH,
  redactReport,
} from "../runner/results/redact.ts";
import { renderJson } from "../runner/report/json.ts";
import { renderJUnit } from "../runner/report/junit.ts";
import { RunReportSchema } from "../runner/results/report-model.ts";
import { makeReport, makeShard, makeTest } from "./helpers/report-fixtures.ts";

const KEY = "sk-live-0123456789abcdef";

describe("which variable names look secret", () => {
  test.each([
    ["OPENAI_API_KEY", true],
    ["openai_api_key", true],
    ["GITHUB_TOKEN", true],
    ["Npm_Token", true],
    ["AWS_SECRET_ACCESS_KEY", true],
    ["CLIENT_SECRET_ID", true],
    ["DB_PASSWORD", true],
    ["PASSWORDLESS_MODE", true],
    ["KEY", false],
    ["MONKEY", false],
    ["KEYBOARD_LAYOUT", false],
    ["TOKENIZER", false],
    ["HOME", false],
    ["PATH", false],
  ])("%s → %p", (name, secret) => {
    expect(isSecretName(name)).toBe(secret);
  });

  test("extra names and globs are whole-name, case-insensitive matches", () => {
    expect(isSecretName("DATABASE_URL", ["DATABASE_URL"])).toBe(true);
    expect(isSecretName("database_url", ["DATABASE_URL"])).toBe(true);
    expect(isSecretName("DATABASE_URL_RO", ["DATABASE_URL"])).toBe(false);
    expect(isSecretName("AWS_SESSION", ["AWS_*"])).toBe(true);
    expect(isSecretName("STRIPE_SK1", ["STRIPE_SK?"])).toBe(true);
    expect(isSecretName("STRIPE_SK12", ["STRIPE_SK?"])).toBe(false);
    // Regex metacharacters in a name are literal.
    expect(isSecretName("AXB", ["A.B"])).toBe(false);
  });

  test.each(["", "A B", "A=B", "A\0B"])("an invalid extra name %p throws a one-line error", (bad) => {
    expect(() => compileNameGlob(bad)).toThrow(/^invalid secret variable name .*: use a name or glob/);
    expect(() => makeRedactor({}, { extraNames: [bad] })).toThrow(/invalid secret variable name/);
  });
});

describe("makeRedactor", () => {
  test("replaces every occurrence of a secret value with [redacted:NAME]", () => {
    const redact = makeRedactor({ MY_API_KEY: KEY, HOME: "/home/someone" });
    expect(redact(`Expected "x", received "${KEY}"; again: ${KEY}.`)).toBe(
      'Expected "x", received "[redacted:MY_API_KEY]"; again: [redacted:MY_API_KEY].',
    );
    expect(redact("/home/someone/project")).toBe("/home/someone/project");
    expect(redact.names).toEqual(["MY_API_KEY"]);
  });

  test(`values shorter than ${MIN_SECRET_LENGTH} code points are left alone`, () => {
    const redact = makeRedactor({ A_TOKEN: "1234567", B_TOKEN: "12345678", C_KEY: "🔑🔑🔑🔑🔑🔑🔑", D_KEY: "" });
    expect(redact("1234567 12345678 🔑🔑🔑🔑🔑🔑🔑")).toBe("1234567 [redacted:B_TOKEN] 🔑🔑🔑🔑🔑🔑🔑");
    expect(redact.names).toEqual(["B_TOKEN"]);
  });

  test("non-secret names are not redacted, extra names are", () => {
    const env = { DATABASE_URL: "postgres://u:pw@db/x", PLAIN: "postgres://u:pw@db/x-not" };
    expect(makeRedactor(env)("postgres://u:pw@db/x")).toBe("postgres://u:pw@db/x");
    expect(makeRedactor(env, { extraNames: ["database_*"] })("url postgres://u:pw@db/x!")).toBe(
      "url [redacted:DATABASE_URL]!",
    );
  });

  test("a value containing a shorter one is redacted whole, not around the shorter one", () => {
    const redact = makeRedactor({ SHORT_KEY: "abcdefgh", LONG_KEY: "xxabcdefghyy" });
    expect(redact("[xxabcdefghyy] [abcdefgh]")).toBe("[[redacted:LONG_KEY]] [[redacted:SHORT_KEY]]");
  });

  test("overlapping values of two variables become one marker, with no fragment left", () => {
    const redact = makeRedactor({ A_KEY: "11112222", B_KEY: "22223333" });
    expect(redact("<111122223333>")).toBe("<[redacted:A_KEY+B_KEY]>");
    // Adjacent, not overlapping: two markers.
    expect(redact("1111222222223333")).toBe("[redacted:A_KEY][redacted:B_KEY]");
  });

  test("a value overlapping itself is covered whole", () => {
    const redact = makeRedactor({ REPEAT_TOKEN: "abababab" });
    expect(redact("xababababababy")).toBe("x[redacted:REPEAT_TOKEN]y");
  });

  test("two variables with one value are reported under the first name", () => {
    const redact = makeRedactor({ Z_TOKEN: KEY, A_TOKEN: KEY });
    expect(redact(KEY)).toBe("[redacted:A_TOKEN]");
    expect(redact.names).toEqual(["A_TOKEN"]);
  });

  test("the trimmed value is redacted too", () => {
    const redact = makeRedactor({ FILE_TOKEN: `  ${KEY}\n` });
    expect(redact(`token=${KEY};`)).toBe("token=[redacted:FILE_TOKEN];");
  });

  test(
    "a secret with quotes, backslashes or URL-special characters is redacted as written, inside a JSON string " +
      "and percent-encoded",
    () => {
      const value = 'pa"ss\\wo rd/+?&=token';
      const redact = makeRedactor({ API_TOKEN: value });
      const asJson = JSON.stringify({ auth: value });
      const inUrl = `https://x.example/?t=${encodeURIComponent(value)}`;
      for (const text of [value, asJson, inUrl]) {
        const out = redact(`sent ${text} twice ${text}`);
        expect(out).toContain("[redacted:API_TOKEN]");
        expect(out).not.toContain("wo rd");
        expect(out).not.toContain("wo%20rd");
      }
      expect(redact(asJson)).toBe('{"auth":"[redacted:API_TOKEN]"}');
    },
  );
  test("the marker text itself is never redacted again", () => {
    const redact = makeRedactor({ A_KEY: "redacted:", B_PASSWORD: "12345678" });
    expect(redact("12345678")).toBe("[redacted:B_PASSWORD]");
  });

  test("with no secrets, text comes back unchanged", () => {
    const redact = makeRedactor({ HOME: "/root", UNDEFINED_KEY: undefined });
    expect(redact("anything at all")).toBe("anything at all");
    expect(redact.names).toEqual([]);
  });

  test("a large text with many hits stays fast", () => {
    const redact = makeRedactor({ A_KEY: KEY });
    const text = `${"x".repeat(100)}${KEY}`.repeat(20_000);
    const t0 = performance.now();
    const out = redact(text);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(out).not.toContain(KEY);
    expect(out.split("[redacted:A_KEY]").length - 1).toBe(20_000);
  });
});

describe("redactReport", () => {
  const report = makeReport(
    [
      makeShard({
        index: 1,
        status: "failed",
        reason: `1 test failed: ${KEY}`,
        logPath: `/tmp/${KEY}/shard-1.log`,
        leftovers: [{ pid: 42, command: `curl -H Authorization:${KEY}`, leftGroup: true }],
        tests: [
          makeTest({
            name: `prints ${KEY}`,
            file: `test/${KEY}.test.ts`,
            status: "failed",
            failure: { type: "failure", errorName: `Err${KEY}`, message: `expected ${KEY}`, details: `at x (${KEY})` },
          }),
          makeTest({
            name: "flaky",
            file: `test/${KEY}.test.ts`,
            flaky: true,
            retries: 1,
            attemptFailures: [{ type: "failure", errorName: `T${KEY}`, message: `first try saw ${KEY}` }],
          }),
          makeTest({ name: "passes", file: `test/${KEY}.test.ts` }),
        ],
      }),
    ],
    {
      root: `/srv/project-${KEY}`,
      runId: KEY,
      sweeps: {
        staleRuns: [{ pid: 7, command: `sleep ${KEY}`, leftGroup: true }],
        endOfRun: [{ pid: 8, command: `sh -c ${KEY}`, leftGroup: true }],
      },
    },
  );
  const redacted = redactReport(report, makeRedactor({ SG_API_KEY: KEY }));

  test("redacts names, failures, attempt failures, reasons and killed commands", () => {
    const shard = redacted.shards[0]!;
    expect(shard.reason).toBe("1 test failed: [redacted:SG_API_KEY]");
    expect(shard.leftovers[0]!.command).toBe("curl -H Authorization:[redacted:SG_API_KEY]");
    expect(redacted.sweeps.staleRuns[0]!.command).toBe("sleep [redacted:SG_API_KEY]");
    expect(redacted.sweeps.endOfRun[0]!.command).toBe("sh -c [redacted:SG_API_KEY]");
    const [failed, flaky, passes] = shard.tests;
    expect(failed!.name).toBe("prints [redacted:SG_API_KEY]");
    expect(failed!.failure).toEqual({
      type: "failure",
      errorName: "Err[redacted:SG_API_KEY]",
      message: "expected [redacted:SG_API_KEY]",
      details: "at x ([redacted:SG_API_KEY])",
    });
    expect(flaky!.attemptFailures).toEqual([
      { type: "failure", errorName: "T[redacted:SG_API_KEY]", message: "first try saw [redacted:SG_API_KEY]" },
    ]);
    expect(passes!.failure).toBeUndefined();
    expect("failure" in passes!).toBe(false);
  });

  test("leaves paths and ids alone", () => {
    const shard = redacted.shards[0]!;
    expect(redacted.root).toBe(report.root);
    expect(redacted.runId).toBe(report.runId);
    expect(shard.logPath).toBe(report.shards[0]!.logPath);
    expect(shard.files).toEqual(report.shards[0]!.files);
    expect(shard.tests.map((t) => t.file)).toEqual(report.shards[0]!.tests.map((t) => t.file));
  });

  test("does not modify its input and keeps the report valid", () => {
    expect(report.shards[0]!.reason).toContain(KEY);
    expect(report.shards[0]!.tests[0]!.failure!.message).toContain(KEY);
    expect(() => RunReportSchema.parse(redacted)).not.toThrow();
  });

  test("rendered reports hold the secret only in paths and ids", () => {
    const pathsOnly = (text: string) =>
      text
        .replaceAll(`/tmp/${KEY}/`, "")
        .replaceAll(`test/${KEY}.test.ts`, "")
        .replaceAll(`/srv/project-${KEY}`, "")
        .replaceAll(`"runId": "${KEY}"`, "");
    expect(pathsOnly(renderJson(redacted))).not.toContain(KEY);
    expect(pathsOnly(renderJUnit(redacted))).not.toContain(KEY);
    expect(pathsOnly(renderJson(report))).toContain(KEY);
  });
});

describe("console lines are redacted before they are cut", () => {
  test("a secret past the 160-character cut of a failure message leaks no prefix", async () => {
    const secret = "sk-live-ABCDEFGHIJKLMNOPQRSTUV";
    const dir = makeSuite({
      "long.test.ts":
        `import { test } from "bun:test";\ntest("leaks late", () => { throw new ` +
        `Error("x".repeat(140) + " token=" + process.env.SG_LONG_API_KEY); });\n`,
    });
    const run = await runCli(["run", "--root", dir], { env: { SG_LONG_API_KEY: secret } });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("[redacted:SG_LONG_API_KEY]".slice(0, 10));
    expect(run.stdout).not.toContain(secret.slice(0, 10));
  });
});

afterAll(removeSuites);
