/**
 * Every value of `[shardguard]` and SHARDGUARD_* is validated before anything
 * runs, for `run` and `list` alike, without --preset too: exit 2, one line
 * naming the key, the value as written and what is accepted; no child starts.
 * Real CLI on a fixture suite in a temp directory.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtureFiles, makeSuite, runCli } from "./helpers/cli.ts";

/** [bunfig.toml [shardguard] body, environment, the one error line expected]. */
const CASES: [string, Record<string, string>, string][] = [
  [
    "presets = 3",
    {},
    "invalid bunfig.toml [shardguard] presets 3: expected a table of [shardguard.presets.NAME] tables",
  ],
  [
    'presets = "x"',
    {},
    'invalid bunfig.toml [shardguard] presets "x": expected a table of [shardguard.presets.NAME] tables',
  ],
  [
    "presets = { a = 1 }",
    {},
    'invalid bunfig.toml [shardguard] presets {"a":1}: expected a table of [shardguard.presets.NAME] tables',
  ],
  [
    'redact = ","',
    {},
    'invalid bunfig.toml [shardguard] redact ",": expected variable names separated by commas, at least one',
  ],
  [
    "redact = []",
    {},
    "invalid bunfig.toml [shardguard] redact []: expected variable names separated by commas, at least one",
  ],
  [
    "",
    { SHARDGUARD_REDACT: "," },
    'invalid SHARDGUARD_REDACT ",": expected variable names separated by commas, at least one',
  ],
  [
    "",
    { SHARDGUARD_REDACT: " , " },
    'invalid SHARDGUARD_REDACT " , ": expected variable names separated by commas, at least one',
  ],
  // Bun.TOML reads these as Infinity / NaN; JSON would print them as null.
  ["grace = 1e400", {}, "invalid bunfig.toml [shardguard] grace 1e400: expected a number of seconds from 0 to"],
  [
    "timeout = inf  # forever",
    {},
    "invalid bunfig.toml [shardguard] timeout inf: expected a number of seconds from 0.001 to",
  ],
  ["timeout = -inf", {}, "invalid bunfig.toml [shardguard] timeout -inf: expected"],
  ['"jobs" = nan', {}, "invalid bunfig.toml [shardguard] jobs nan: expected a whole number from 1 to 10000"],
  ['empty-files = "strict"', {}, 'invalid bunfig.toml [shardguard] empty-files "strict": expected pass or fail'],
  ["", { SHARDGUARD_EMPTY_FILES: "off" }, 'invalid SHARDGUARD_EMPTY_FILES "off": expected pass or fail'],
];

describe("a wrong value in bunfig.toml or the environment", () => {
  for (const [toml, env, expected] of CASES) {
    for (const command of ["run", "list"]) {
      test(`${command}: ${toml || JSON.stringify(env)}`, async () => {
        const dir = makeSuite(fixtureFiles("marker"));
        writeFileSync(path.join(dir, "bunfig.toml"), `[shardguard]\n${toml}\n`);
        const marker = path.join(dir, "marker.txt");
        const run = await runCli([command, "--root", dir], { env: { ...env, SG_MARKER: marker } });
        expect(run.code).toBe(2);
        const lines = run.stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(expected);
        expect(lines[0]).not.toContain("null");
        expect(existsSync(marker)).toBe(false);
        expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
      });
    }
  }

  test("a valid presets table and redact list are still accepted", async () => {
    const dir = makeSuite(fixtureFiles("marker"));
    writeFileSync(
      path.join(dir, "bunfig.toml"),
      `[shardguard]\nredact = "MY_*"\n[shardguard.presets.mine]\nfiles = ["*.test.ts"]\n`,
    );
    const run = await runCli(["list", "--root", dir], { env: { SHARDGUARD_REDACT: "A,B" } });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });
});
