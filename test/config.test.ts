/**
 * Settings: precedence flag > environment > bunfig.toml > default, and one
 * clear line for every bad value (table-driven).
 */
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { parseArgs } from "../runner/config/args.ts";
import { resolveSettings } from "../runner/config/load.ts";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";

const resolve = (argv: string[], env: Record<string, string> = {}, bunfig?: string) => {
  const dir = makeSuite(
    bunfig === undefined ? { "a.test.ts": "" } : { "a.test.ts": "", "bunfig.toml": bunfig },
    "sg-config-",
  );
  return {
    dir,
    settings: resolveSettings({ args: parseArgs(argv, "run"), env, cwd: dir, defaultBun: process.execPath }),
  };
};

describe("precedence", () => {
  test("defaults", () => {
    const { dir, settings } = resolve([]);
    expect(settings).toMatchObject({
      root: dir,
      jobs: 4,
      timeoutMs: 1_800_000,
      graceMs: 5_000,
      filesPerShard: 1,
      testEvents: true,
    });
    expect(settings.out).toBe(path.join(dir, ".shardguard"));
    expect(settings.junit).toBe(path.join(dir, ".shardguard", "junit.xml"));
    expect(settings.json).toBe(path.join(dir, ".shardguard", "report.json"));
    expect(settings.ctrf).toBe(path.join(dir, ".shardguard", "ctrf.json"));
    expect(settings.bun).toBe(process.execPath);
  });

  test("bunfig.toml overrides defaults, the environment overrides bunfig, a flag overrides both", () => {
    const toml = '[shardguard]\njobs = 2\ntimeout = 60\ngrace = 1.5\nout = "reports"\nbun-args = ["--retry", "1"]\n';
    expect(resolve([], {}, toml).settings).toMatchObject({
      jobs: 2,
      timeoutMs: 60_000,
      graceMs: 1_500,
      bunArgs: ["--retry", "1"],
    });
    const fromToml = resolve([], {}, toml);
    expect(fromToml.settings.out).toBe(path.join(fromToml.dir, "reports"));
    expect(resolve([], { SHARDGUARD_JOBS: "3" }, toml).settings.jobs).toBe(3);
    expect(resolve(["--jobs", "5"], { SHARDGUARD_JOBS: "3" }, toml).settings.jobs).toBe(5);
    expect(resolve(["--jobs=6"], {}, toml).settings.jobs).toBe(6);
    expect(resolve(["--", "--bail"], {}, toml).settings.bunArgs).toEqual(["--bail"]);
  });

  test("without patterns, discovery follows bunfig's [test] root, like bun test itself", () => {
    const dir = makeSuite(
      { "tests/a.test.ts": "", "examples/b.test.ts": "", "bunfig.toml": '[test]\nroot = "tests"\n' },
      "sg-config-",
    );
    const settings = resolveSettings({ args: parseArgs([], "run"), env: {}, cwd: dir, defaultBun: process.execPath });
    expect(settings.patterns).toEqual(["tests"]);
    expect(
      resolveSettings({ args: parseArgs(["examples"], "run"), env: {}, cwd: dir, defaultBun: process.execPath })
        .patterns,
    ).toEqual(["examples"]);
  });

  test("--empty-files: pass by default (plain bun test's verdict), its variable and its bunfig key", () => {
    expect(resolve([]).settings.emptyFiles).toBe("pass");
    expect(resolve([], {}, '[shardguard]\nempty-files = "fail"\n').settings.emptyFiles).toBe("fail");
    expect(
      resolve([], { SHARDGUARD_EMPTY_FILES: "pass" }, '[shardguard]\nempty-files = "fail"\n').settings.emptyFiles,
    ).toBe("pass");
    expect(resolve(["--empty-files", "fail"], { SHARDGUARD_EMPTY_FILES: "pass" }).settings.emptyFiles).toBe("fail");
  });

  test("--no-test-events, its variable and its bunfig key", () => {
    expect(resolve(["--no-test-events"]).settings.testEvents).toBe(false);
    expect(resolve([], { SHARDGUARD_NO_TEST_EVENTS: "1" }).settings.testEvents).toBe(false);
    expect(resolve([], {}, "[shardguard]\ntest-events = false\n").settings.testEvents).toBe(false);
  });
});

describe("bad input: one line naming the key, the value and what is accepted", () => {
  const cases: [string, string[], Record<string, string>, string | undefined, RegExp][] = [
    ["zero jobs", ["--jobs", "0"], {}, undefined, /--jobs "0": expected a whole number/],
    ["negative jobs", ["--jobs", "-3"], {}, undefined, /--jobs needs a value|--jobs "-3"/],
    ["fractional jobs", ["--jobs", "1.5"], {}, undefined, /--jobs "1.5"/],
    ["non-numeric timeout", ["--timeout", "ten"], {}, undefined, /--timeout "ten": expected a number of seconds/],
    ["zero timeout", ["--timeout", "0"], {}, undefined, /--timeout "0"/],
    ["negative grace in env", [], { SHARDGUARD_GRACE: "-1" }, undefined, /SHARDGUARD_GRACE "-1"/],
    ["empty-ish env number", [], { SHARDGUARD_JOBS: "four" }, undefined, /SHARDGUARD_JOBS "four"/],
    ["unknown bunfig key", [], {}, "[shardguard]\njbos = 2\n", /unknown key bunfig.toml \[shardguard\] jbos/],
    ["bunfig string for a number", [], {}, '[shardguard]\njobs = "many"\n', /\[shardguard\] jobs "many"/],
    ["bunfig boolean for a number", [], {}, "[shardguard]\ntimeout = true\n", /\[shardguard\] timeout true/],
    ["bunfig patterns not a list", [], {}, '[shardguard]\npatterns = "x"\n', /patterns "x": expected an array/],
    [
      "broken TOML",
      [],
      {},
      "[shardguard\n",
      /bunfig\.toml:1:12 is not valid TOML: Expected ']' to close a table header/,
    ],
    [
      "broken TOML, with the line and column of the error",
      [],
      {},
      "[test]\npreload = []\n\n[shardguard]\njobs = = 2\n",
      /bunfig\.toml:5:8 is not valid TOML: Expected a value but found '='$/,
    ],
    [
      "a key given twice in TOML",
      [],
      {},
      "[shardguard]\njobs = 4\njobs = 5\n",
      /bunfig\.toml:3:1 is not valid TOML: Cannot redefine key 'jobs'$/,
    ],
    ["unknown flag", ["--jbos", "2"], {}, undefined, /unknown flag --jbos/],
    ["missing value", ["--jobs"], {}, undefined, /flag --jobs needs a value/],
    ["repeated flag", ["--jobs", "1", "--jobs", "2"], {}, undefined, /given twice/],
    [
      "missing root",
      ["--root", "/nonexistent/sg-root"],
      {},
      undefined,
      /--root "\/nonexistent\/sg-root": expected an existing directory/,
    ],
    [
      "bun that is not executable",
      ["--bun", "/nonexistent/bun"],
      {},
      undefined,
      /--bun "\/nonexistent\/bun": expected an executable/,
    ],
    [
      "timeout that rounds to 0 ms",
      ["--timeout", "0.0001"],
      {},
      undefined,
      /--timeout "0.0001": expected a number of seconds from 0.001/,
    ],
    [
      "grace over the timer limit",
      ["--grace", "3000000"],
      {},
      undefined,
      /--grace "3000000": expected a number of seconds from 0 to 2147483/,
    ],
    ["a value for a boolean flag", ["--no-test-events=1"], {}, undefined, /flag --no-test-events takes no value/],
    [
      "bun from bunfig that is not executable",
      [],
      {},
      '[shardguard]\nbun = "nope/bun"\n',
      /bunfig.toml \[shardguard\] bun ".*nope\/bun": expected an executable/,
    ],
    [
      "two reports on one path",
      ["--json", "out/r.json", "--ctrf", "out/r.json"],
      {},
      undefined,
      /--ctrf ".*out\/r.json": it is also the --json path/,
    ],
    ["bad lock name", ["--lock", "a/b"], {}, undefined, /--lock "a\/b": expected a name/],
    [
      "bad redact names",
      ["--redact", "OK_NAME,bad-name"],
      {},
      undefined,
      /--redact "OK_NAME,bad-name": expected variable names/,
    ],
    ["bad events variable", [], { SHARDGUARD_NO_TEST_EVENTS: "maybe" }, undefined, /SHARDGUARD_NO_TEST_EVENTS "maybe"/],
    [
      "bad empty-files flag",
      ["--empty-files", "strict"],
      {},
      undefined,
      /^invalid --empty-files "strict": expected pass or fail$/,
    ],
    [
      "bad empty-files variable",
      [],
      { SHARDGUARD_EMPTY_FILES: "true" },
      undefined,
      /^invalid SHARDGUARD_EMPTY_FILES "true": expected pass or fail$/,
    ],
    [
      "bad empty-files key",
      [],
      {},
      "[shardguard]\nempty-files = false\n",
      /^invalid bunfig.toml \[shardguard\] empty-files false: expected pass or fail$/,
    ],
    // A bad value under a higher-precedence one is still reported (docs/configuration.md).
    [
      "bad bunfig value hidden by a flag",
      ["--jobs", "1"],
      {},
      "[shardguard]\njobs = true\n",
      /^invalid bunfig.toml \[shardguard\] jobs true: expected a whole number from 1 to 10000$/,
    ],
    [
      "bad environment value hidden by a flag",
      ["--jobs", "2"],
      { SHARDGUARD_JOBS: "abc" },
      undefined,
      /^invalid SHARDGUARD_JOBS "abc": expected a whole number from 1 to 10000$/,
    ],
    [
      "bad bunfig value hidden by the environment",
      [],
      { SHARDGUARD_TIMEOUT: "5" },
      "[shardguard]\ntimeout = -1\n",
      /^invalid bunfig.toml \[shardguard\] timeout -1: expected a number of seconds/,
    ],
    [
      "bad bunfig patterns hidden by command-line patterns",
      ["a.test.ts"],
      {},
      "[shardguard]\npatterns = 3\n",
      /patterns 3: expected an array/,
    ],
  ];
  for (const [name, argv, env, toml, message] of cases) {
    test(name, () => {
      let error: unknown;
      try {
        resolve(argv, env, toml);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const text = (error as Error).message;
      expect(text).toMatch(message);
      expect(text.includes("\n")).toBe(false);
    });
  }
});

afterAll(removeSuites);

describe("plurals in console lines", () => {
  test("words ending in s take -es, one takes none", async () => {
    const { plural } = await import("../runner/util/format.ts");
    expect(plural(2, "leftover process")).toBe("2 leftover processes");
    expect(plural(1, "leftover process")).toBe("1 leftover process");
    expect(plural(1, "shard")).toBe("1 shard");
    expect(plural(3, "shard")).toBe("3 shards");
  });
});
