/**
 * What a new user hit (issue 26), as whole CLI processes: a directory the
 * walk cannot read is one line and exit 2 (and the compiled CLI never shows
 * its minified trace), `--out` among the tested files is refused instead of
 * silently shrinking the run, and a failed shard's end line, excerpt and log
 * path reach a pipe as one block.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildCompiledCli, freshCompiledCli } from "../runner/cli/compiled.ts";
import { CLI, fixtureFiles, makeSuite, removeSuites, REPO, runCli, withoutCiVariables } from "./helpers/cli.ts";

afterAll(removeSuites);

const PASS = fixtureFiles("pass")["pass.test.ts"]!;
const BIN = path.join(REPO, "runner", "cli-bin.ts");

/** The compiled CLI of this checkout, built when stale: what `shardguard` runs for a user. */
async function compiled(): Promise<string> {
  return freshCompiledCli(REPO) ?? (await buildCompiledCli(REPO));
}

/** No line of a stack trace (`    at f (file:1:2)`) and no Bun crash footer. */
function expectNoTrace(text: string): void {
  expect(text).not.toMatch(/^\s+at .+[:(]/m);
  expect(text).not.toContain("shardguard.cjs:");
  expect(text).not.toMatch(/^Bun v\d/m);
}

/**
 * How to run a command as an account that cannot read a mode-000 directory:
 * as root (whom mode 000 does not stop), through setpriv as nobody, when
 * nobody can run Bun and read this checkout; as anyone else, directly.
 */
function unprivileged(): { prefix: string[] } | { skip: string } {
  if (process.getuid?.() !== 0) return { prefix: [] };
  const prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env", "HOME=/tmp"];
  const probe = spawnSync(
    prefix[0]!,
    [...prefix.slice(1), process.execPath, "-e", `require("node:fs").accessSync(${JSON.stringify(CLI)})`],
    { encoding: "utf8" },
  );
  if (probe.error || probe.status !== 0)
    return {
      skip:
        `running as root and cannot run Bun as nobody through setpriv ` +
        `(${probe.error?.message ?? probe.stderr.trim()})`,
    };
  return { prefix };
}

describe("a directory the walk cannot read", () => {
  const how = unprivileged();
  if ("skip" in how) {
    test.skip(`one line, exit 2 (skipped: ${how.skip})`, () => {});
    return;
  }
  test.each(["list", "run", "run test/**/*.test.ts"])(
    "shardguard %s: one line naming it, exit 2, nothing started, from the compiled CLI",
    async (command) => {
      const args = command.split(" ");
      const entry = await compiled();
      const dir = makeSuite({ "test/pass.test.ts": PASS, "test/locked/hidden.test.ts": PASS, "package.json": "{}\n" });
      chmodSync(dir, 0o777);
      chmodSync(path.join(dir, "test", "locked"), 0o000);
      try {
        const r = spawnSync(
          how.prefix[0] ?? process.execPath,
          [...how.prefix.slice(1), ...(how.prefix.length > 0 ? [process.execPath] : []), BIN, ...args],
          {
            cwd: dir,
            encoding: "utf8",
            env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
            timeout: 60_000,
          },
        );
        expect(freshCompiledCli(REPO)).toBe(entry);
        expect(r.status).toBe(2);
        const lines = r.stderr.trimEnd().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^shardguard: cannot read "test\/locked" under --root .* EACCES \(scandir\)/);
        expectNoTrace(r.stderr + r.stdout);
        expect(r.stdout).toBe("");
        expect(existsSync(path.join(dir, ".shardguard"))).toBe(false);
      } finally {
        chmodSync(path.join(dir, "test", "locked"), 0o755);
      }
    },
    120_000,
  );
});

describe("an internal error", () => {
  test("the compiled CLI prints one line naming the file with the stack trace, exit 1 (docs/reports.md)", async () => {
    const entry = await compiled();
    const dir = makeSuite({ "a.test.ts": PASS });
    // A stand-in for a bug: the directory crawler's readdir throws something that is no fs error.
    writeFileSync(
      path.join(dir, "bug.ts"),
      `require("node:fs").readdirSync = () => { throw new TypeError("readdir double broke"); };\n`,
    );
    const r = spawnSync(process.execPath, ["--preload", path.join(dir, "bug.ts"), entry, "list"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    const m = /^shardguard: internal error: readdir double broke \(a bug in shardguard; stack trace: (\S+)\)$/.exec(
      lines[0]!,
    );
    expect(m).not.toBeNull();
    expectNoTrace(r.stderr + r.stdout);
    const trace = readFileSync(m![1]!, "utf8");
    expect(trace).toContain('argv: ["list"]');
    expect(trace).toContain("TypeError: readdir double broke");
    expect(trace).toMatch(/^\s+at /m);
    rmSync(path.dirname(m![1]!), { recursive: true, force: true });
  }, 120_000);
});

describe("--out among the tested files", () => {
  const project = () =>
    makeSuite({
      "test/pass.test.ts": PASS,
      "test/deep/b.test.ts": PASS,
      "src/c.test.ts": PASS,
      "package.json": "{}\n",
    });

  test.each(["run", "list"])(
    "%s --out test: refused, naming --out and the files it holds; nothing written there",
    async (command) => {
      const dir = project();
      const r = await runCli([command, "--out", "test"], { cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(
        `shardguard: --out ${path.join(dir, "test")} holds 2 planned test files: test/deep/b.test.ts, ` +
          `test/pass.test.ts; reports and logs go to --out, so it must hold no test file (choose another, ` +
          `e.g. the default .shardguard)`,
      );
      expect(r.stdout).toBe("");
      expect(existsSync(path.join(dir, "test", "report.json"))).toBe(false);
      expect(existsSync(path.join(dir, "test", "runs"))).toBe(false);
    },
    60_000,
  );

  test("run FILE --out FILE: refused as the planned file, not as a missing one", async () => {
    const dir = project();
    const r = await runCli(["run", "test/pass.test.ts", "--out", "test/pass.test.ts"], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `--out ${path.join(dir, "test", "pass.test.ts")} is the planned test file test/pass.test.ts`,
    );
    expect(r.stderr).not.toContain("no test file at");
  }, 60_000);

  test("an --out inside the root that holds no planned file is searched like any directory and accepted", async () => {
    const dir = project();
    const r = await runCli(["list", "--out", "reports"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("3 files under");
  }, 60_000);
});

describe("a failed shard's block on a pipe", () => {
  /** A file that prints its own marker lines, then fails at the same wall-clock moment as the others. */
  const failing = (name: string) => `import { expect, test } from "bun:test";
test("${name} fails", async () => {
  for (let i = 0; i < 40; i++) console.log("${name}-line-" + i + " " + "x".repeat(60));
  await Bun.sleep(Math.max(0, Number(process.env.END_AT) - Date.now()));
  expect("${name}").toBe("something-else");
});
`;
  const passing = `import { test } from "bun:test";
test("waits", async () => { await Bun.sleep(Math.max(0, Number(process.env.END_AT) - Date.now())); });
`;

  test("end line, failing tests, log path and excerpt are " +
    "contiguous for every failed shard, in several runs", async () => {
    const files: Record<string, string> = {};
    const names = ["f0", "f1", "f2", "f3"];
    for (const n of names) files[`${n}.test.ts`] = failing(n);
    for (let i = 0; i < 4; i++) files[`p${i}.test.ts`] = passing;
    const dir = makeSuite(files);
    for (let round = 0; round < 3; round++) {
      const r = await runCli(["run", "--root", dir, "--jobs", "8", "--annotations", "off"], {
        env: { END_AT: String(Date.now() + 3000) },
      });
      expect(r.code).toBe(1);
      // Blocks: a `[i/n] ...` line and every indented line after it.
      const blocks: string[][] = [];
      for (const line of r.stdout.split("\n")) {
        if (/^\[\d+\/\d+\] /.test(line)) blocks.push([line]);
        else if (line.startsWith("    ") && blocks.length > 0) blocks.at(-1)!.push(line);
        else blocks.push([line]);
      }
      for (const n of names) {
        const mine = blocks.filter((b) => b.some((l) => l.includes(`${n}-line-`)));
        expect(mine).toHaveLength(1);
        const block = mine[0]!;
        expect(block[0]).toMatch(new RegExp(`^\\[\\d+/8\\] FAILED .* ${n}\\.test\\.ts: `));
        expect(block.some((l) => /^ {4}failed +.*fails: expect\(received\)\.toBe\(expected\)/.test(l))).toBe(true);
        expect(block.some((l) => new RegExp(`^ {4}full log: .*shard-\\d+-${n}\\.log$`).test(l))).toBe(true);
        expect(block.some((l) => l.includes(`Expected: "something-else"`))).toBe(true);
        expect(block.some((l) => l.includes(`Received: "${n}"`))).toBe(true);
      }
    }
  }, 120_000);
});
