/**
 * The three argv parsers (run/list, bg/status, merge) on node:util parseArgs:
 * the corners their hand-written loops had, kept (`--` pass-through, `=`
 * values, values that look like flags, short groups, repeated flags).
 */
import { describe, expect, test } from "bun:test";
import { parseArgs, RUN_FLAGS } from "../runner/config/args.ts";
import { parseBgArgs } from "../runner/cli/bg-args.ts";
import { parseMergeArgs } from "../runner/cli/merge-args.ts";
import { flagHelp } from "../runner/cli/help.ts";
import { BOOLEAN_FLAGS, SETTINGS } from "../runner/config/settings-schema.ts";

const run = (argv: string[]) => parseArgs(argv, "run", RUN_FLAGS);

describe("run and list", () => {
  test("run --help names every flag run takes, each with a placeholder of its kind", () => {
    const help = flagHelp("run");
    const flags = [
      ...SETTINGS.map((s) => s.flag),
      ...Object.keys(BOOLEAN_FLAGS),
      ...RUN_FLAGS.valued,
      ...RUN_FLAGS.boolean,
    ];
    expect(flags.filter((f) => !new RegExp(`^  ${f}( |$)`, "m").test(help))).toEqual([]);
    expect(help).toContain("--budget-usd DOLLARS");
    const wrong = SETTINGS.filter((s) => !/seconds/i.test(s.kind) && help.includes(`${s.flag} SECONDS`));
    expect(wrong.map((s) => s.flag)).toEqual([]);
  });

  test("everything after -- goes to bun test unchanged, flags and all", () => {
    const args = run(["a.test.ts", "--jobs=2", "--", "--bail", "-t", "x", "--jobs", "9", "--"]);
    expect(args.patterns).toEqual(["a.test.ts"]);
    expect([...args.values]).toEqual([["jobs", "2"]]);
    expect(args.bunArgs).toEqual(["--bail", "-t", "x", "--jobs", "9", "--"]);
  });

  test("a value may start with one dash or be empty; a next --flag is not a value", () => {
    expect(run(["--root", "-x"]).values.get("root")).toBe("-x");
    expect(run(["--root="]).values.get("root")).toBe("");
    expect(run(["--preset", "-"]).extras.get("--preset")).toBe("-");
    expect(() => run(["--root", "--jobs", "2"])).toThrow(
      "flag --root needs a value (shardguard run --help lists the flags)",
    );
    expect(() => run(["--preset", "--last-failed"])).toThrow("flag --preset needs a value");
  });

  test("-h and --help, the negated boolean and the extras; '-' is a pattern", () => {
    const args = run(["-", "-h", "--no-test-events", "--last-failed", "--preset", "q"]);
    expect(args).toMatchObject({ patterns: ["-"], help: true });
    expect([...args.booleans]).toEqual(["--no-test-events"]);
    expect([...args.extras]).toEqual([
      ["--last-failed", true],
      ["--preset", "q"],
    ]);
    // A valued extra given twice is refused like shardguard's other flags, never the last one silently.
    for (const flag of ["--preset", "--tier", "--shard"])
      expect(() => run([flag, "a", `${flag}=b`])).toThrow(`flag ${flag} was given twice`);
    expect(() => run(["--test-events"])).toThrow(
      "unknown flag --test-events for shardguard run; flags for " +
        'bun test go after "--" (shardguard run --help lists the flags)',
    );
  });

  test("short groups, '=' on a flag without a value, and negative numbers are unknown flags as written", () => {
    expect(() => run(["-hx"])).toThrow("unknown flag -hx for shardguard run");
    expect(() => run(["-x=3"])).toThrow("unknown flag -x for shardguard run");
    expect(() => run(["--help=1"])).toThrow("unknown flag --help for shardguard run");
    expect(() => run(["--last-failed=1"])).toThrow("unknown flag --last-failed for shardguard run");
    expect(() => run(["--jobs", "2", "-5"])).toThrow("unknown flag -5 for shardguard run");
    expect(() => run(["--bogus=2", "--jobs"])).toThrow("unknown flag --bogus for shardguard run");
  });
});

describe("bg", () => {
  test("bg takes its own flags out and hands the rest to run in order, -- included", () => {
    const options = parseBgArgs([
      "--jobs",
      "2",
      "--label=nightly",
      "--local",
      "x.test.ts",
      "--cap",
      "60",
      "--",
      "--bail",
      "--label",
      "y",
    ])!;
    expect(options).toMatchObject({ label: "nightly", capSeconds: 60, mode: "local" });
    expect(options.runArgv).toEqual(["--jobs", "2", "x.test.ts", "--", "--bail", "--label", "y"]);
    expect(options.runArgs.bunArgs).toEqual(["--bail", "--label", "y"]);
  });

  test("a bg flag's value is the next argument whatever it says; repeats and --local=1 are refused", () => {
    expect(parseBgArgs(["--label", "--local"])).toMatchObject({ label: "--local", mode: "auto" });
    expect(() => parseBgArgs(["--label", "a", "--label=b"])).toThrow("flag --label was given twice");
    expect(() => parseBgArgs(["--label="])).toThrow("flag --label needs a value (shardguard bg --help)");
    expect(() => parseBgArgs(["--local=1"])).toThrow("unknown flag --local for shardguard bg");
  });
});

describe("merge", () => {
  const host = { cwd: "/r" };
  test("DIRs, --out=DIR and --update-timings FILE; a value may look like a flag", () => {
    expect(parseMergeArgs(["a", "--out=m", "b", "--update-timings", "--t.json"], host)).toEqual({
      sources: ["/r/a", "/r/b"],
      out: "/r/m",
      updateTimings: "/r/--t.json",
    });
    expect(parseMergeArgs(["a", "-h"], host)).toBeNull();
  });

  test("'-', '--' and -h=1 are unknown flags; an empty value, a repeat and a missing DIR are refused", () => {
    const unknown = (flag: string) =>
      `unknown flag ${flag} for shardguard merge; accepted: --out DIR, --update-timings FILE`;
    expect(() => parseMergeArgs(["a", "-"], host)).toThrow(unknown("-"));
    expect(() => parseMergeArgs(["a", "--", "b"], host)).toThrow(unknown("--"));
    expect(() => parseMergeArgs(["-h=1"], host)).toThrow(unknown("-h"));
    expect(() => parseMergeArgs(["a", "--out="], host)).toThrow("flag --out needs a value (shardguard merge --help)");
    expect(() => parseMergeArgs(["a", "--out", "m", "--out", "n"], host)).toThrow("flag --out was given twice");
    expect(() => parseMergeArgs(["--out", "m"], host)).toThrow("shardguard merge needs at least one DIR");
  });
});
