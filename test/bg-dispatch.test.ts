/**
 * `shardguard bg` with the dispatch backend, against a fake `gh` first on
 * PATH (test/fixtures/fake-gh/gh.ts: answers from a state file, records
 * every call). Real git checkouts in temp directories, the real CLI, the
 * real detached follower; no network.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { makeSuite, removeSuites, REPO, runCli } from "./helpers/cli.ts";

afterAll(removeSuites);

const FAKE_GH = path.join(REPO, "test", "fixtures", "fake-gh", "gh.ts");

/** A committed checkout on branch main with origin `https://github.com/<origin>.git`, and a fake gh. */
function checkout(origin = "acme/widgets", extra: Record<string, string> = {}) {
  const dir = makeSuite(
    {
      "pass.test.ts": `import { test, expect } from "bun:test";\ntest("ok", () => expect(1).toBe(1));\n`,
      ".gitignore": ".shardguard/\nbin/\ngh-*\n",
      ...extra,
    },
    "sg-bg-gh-",
  );
  const git = (...args: string[]) => {
    const r = spawnSync("git", args, {
      cwd: dir,
      encoding: "utf8",
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@e",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@e",
      },
    });
    if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
    return r.stdout.trim();
  };
  git("init", "-q", "-b", "main");
  git("remote", "add", "origin", `https://github.com/${origin}.git`);
  git("add", "-A");
  git("commit", "-qm", "init");
  const sha = git("rev-parse", "HEAD");
  const bin = path.join(dir, "bin");
  mkdirSync(bin);
  writeFileSync(path.join(bin, "gh"), `#!/bin/sh\nexec "${process.execPath}" "${FAKE_GH}" "$@"\n`);
  chmodSync(path.join(bin, "gh"), 0o755);
  const stateFile = path.join(dir, "gh-state.json");
  const calls = path.join(dir, "gh-calls.jsonl");
  writeFileSync(calls, "");
  const setState = (s: object) =>
    writeFileSync(
      stateFile,
      JSON.stringify({
        auth: true,
        push: true,
        branches: { main: sha },
        runs: [],
        conclusion: "success",
        viewsToComplete: 2,
        ...s,
      }),
    );
  setState({});
  const env = {
    PATH: `${bin}:${process.env.PATH}`,
    FAKE_GH_STATE: stateFile,
    FAKE_GH_CALLS: calls,
    SHARDGUARD_BG_POLL_MS: "20",
  };
  const readCalls = () =>
    readFileSync(calls, "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string[]);
  return { dir, sha, git, env, setState, readCalls, state: () => JSON.parse(readFileSync(stateFile, "utf8")) };
}

const bg = (c: ReturnType<typeof checkout>, ...args: string[]) =>
  runCli(["bg", ...args], { cwd: c.dir, env: c.env, limitMs: 30_000 });
const logOf = (stdout: string) => /log (\/\S+\.log)/.exec(stdout)?.[1] ?? "";
/** `status LOG --follow` of the run `bg` printed, to its end. */
const followToEnd = (c: { dir: string; env: Record<string, string | undefined> }, stdout: string) =>
  runCli(["status", logOf(stdout), "--follow"], { cwd: c.dir, env: c.env, limitMs: 30_000 });

describe("dispatch", () => {
  test("passes expected_sha and the nonce, finds the run by nonce, and maps each conclusion", async () => {
    const c = checkout();
    const codes: Record<string, number> = { success: 0, failure: 1, cancelled: 130, timed_out: 2, startup_failure: 2 };
    const states: Record<string, string> = {
      success: "passed",
      failure: "failed",
      cancelled: "cancelled",
      timed_out: "timed-out",
      startup_failure: "error",
    };
    for (const [conclusion, code] of Object.entries(codes)) {
      c.setState({ conclusion });
      const started = await bg(c, "--dispatch", "--repo", "acme/widgets", "--lock", `lane-${conclusion}`);
      expect(started.stderr).toBe("");
      expect(started.code).toBe(0);
      expect(started.stdout).toContain(`backend=dispatch tested=${c.sha}`);
      const followed = await followToEnd(c, started.stdout);
      expect(followed.code).toBe(code);
      const log = readFileSync(logOf(started.stdout), "utf8");
      expect(log.trimEnd().split("\n").at(-1)).toBe(`### shardguard EXIT=${code} ###`);
      expect(log).toContain(`concluded ${conclusion}`);
      const dispatched = c
        .readCalls()
        .filter((a) => a[0] === "workflow" && a[1] === "run")
        .at(-1)!;
      const nonce = /nonce=(\S+)/.exec(started.stdout)![1]!;
      expect(dispatched).toEqual([
        "workflow",
        "run",
        "shardguard-bg.yml",
        "--repo",
        "acme/widgets",
        "--ref",
        "main",
        "-f",
        `expected_sha=${c.sha}`,
        "-f",
        `nonce=${nonce}`,
      ]);
      expect(nonce.startsWith(`lane-${conclusion}-${c.sha.slice(0, 12)}-none-`)).toBe(true);
      // The run followed is the one named by this nonce.
      const run = c
        .state()
        .runs.find((r: { displayTitle: string }) => r.displayTitle.includes(`[shardguard ${nonce}]`));
      expect(log).toContain(`CI run ${run.databaseId} `);
      // status CI_RUN_ID asks gh.
      const ci = await runCli(["status", String(run.databaseId)], { cwd: c.dir, env: c.env });
      expect(ci.code).toBe(0);
      expect(ci.stdout).toContain(`: ${states[conclusion]} (${conclusion}, exit ${code})`);
      // The background run's own status says the same, and why.
      const own = await runCli(["status", logOf(started.stdout)], { cwd: c.dir, env: c.env });
      expect(own.stdout).toContain(
        `: ${states[conclusion]} (exit ${code}): CI run ${run.databaseId} concluded ${conclusion}`,
      );
    }
    // Remote state came from gh api only; nothing fetched.
    expect(c.readCalls().some((a) => a[0] === "api" && a[1] === "repos/acme/widgets/branches/main")).toBe(true);
  }, 120_000);

  test("a queued, running or successful dispatch of the same " +
    "lane, revision and base is followed, not dispatched again", async () => {
    const c = checkout();
    const key = `dedupe-lane-${c.sha.slice(0, 12)}-none-`;
    for (const [status, conclusion, reused] of [
      ["in_progress", null, true],
      ["completed", "success", true],
      ["completed", "failure", false],
    ] as const) {
      c.setState({
        runs: [
          {
            databaseId: 77,
            displayTitle: `paid [shardguard ${key}abcd1234]`,
            status,
            conclusion,
            url: "https://github.com/acme/widgets/actions/runs/77",
            event: "workflow_dispatch",
            headSha: c.sha,
            ...(status === "completed" ? {} : { views: 0 }),
          },
        ],
      });
      const before = c.readCalls().length;
      const started = await bg(c, "--dispatch", "--repo", "acme/widgets", "--lock", "dedupe-lane");
      expect(started.code).toBe(0);
      const followed = await followToEnd(c, started.stdout);
      const dispatchedAgain = c
        .readCalls()
        .slice(before)
        .some((a) => a[0] === "workflow" && a[1] === "run");
      expect(dispatchedAgain).toBe(!reused);
      const log = readFileSync(logOf(started.stdout), "utf8");
      if (reused) {
        expect(log).toContain("following existing run 77");
        expect(followed.code).toBe(0);
      }
    }
  }, 60_000);

  test("a preset's repository, workflow and inputs ({tier} replaced); the tier is part of the dedupe key", async () => {
    const c = checkout("acme/widgets", {
      "bunfig.toml":
        `[shardguard.presets.paid]\nglobs = ["*.test.ts"]\n` +
        `tier = { env = "PAID_TIER", values = ["gate", "periodic"], default = "gate" }\n` +
        `dispatch = { repo = "acme/widgets", workflow = "paid.yml", inputs = { tier = "{tier}" } }\n`,
    });
    const started = await bg(c, "--dispatch", "--preset", "paid", "--tier", "periodic", "--lock", "paid-lane");
    expect(started.stderr).toBe("");
    expect(started.code).toBe(0);
    expect((await followToEnd(c, started.stdout)).code).toBe(0);
    const dispatched = c.readCalls().find((a) => a[0] === "workflow" && a[1] === "run")!;
    expect(dispatched.slice(0, 7)).toEqual(["workflow", "run", "paid.yml", "--repo", "acme/widgets", "--ref", "main"]);
    expect(dispatched).toContain("tier=periodic");
    expect(dispatched.find((a) => a.startsWith("nonce="))).toStartWith(
      `nonce=paid-lane.periodic-${c.sha.slice(0, 12)}-`,
    );
  }, 60_000);

  test("shardguard's own output (reports, bg logs) does not make the tree dirty", async () => {
    const c = checkout("acme/widgets", { ".gitignore": "bin/\ngh-*\n" });
    const local = await bg(c, "--local", "--follow");
    expect(local.code).toBe(0);
    const started = await bg(c, "--dispatch", "--repo", "acme/widgets");
    expect(started.stderr).toBe("");
    expect(started.code).toBe(0);
    expect((await followToEnd(c, started.stdout)).code).toBe(0);
  }, 60_000);

  test("status CI_RUN_ID asks gh; --follow waits for the conclusion and exits with its code", async () => {
    const c = checkout();
    c.setState({
      conclusion: "failure",
      viewsToComplete: 3,
      runs: [
        {
          databaseId: 55,
          displayTitle: "x",
          status: "queued",
          conclusion: null,
          url: "https://github.com/acme/widgets/actions/runs/55",
          event: "workflow_dispatch",
          views: 0,
        },
      ],
    });
    const once = await runCli(["status", "55"], { cwd: c.dir, env: c.env });
    expect(once.code).toBe(0);
    expect(once.stdout).toContain("CI run 55 on acme/widgets: running (in_progress)");
    const followed = await runCli(["status", "55", "--follow"], { cwd: c.dir, env: c.env, limitMs: 30_000 });
    expect(followed.code).toBe(1);
    expect(followed.stdout).toContain("failed (failure, exit 1)");
    expect(
      c
        .readCalls()
        .filter((a) => a[0] === "run" && a[1] === "view")
        .every((a) => a.includes("--repo") && a.includes("acme/widgets")),
    ).toBe(true);
  }, 60_000);

  test("refuses a dirty, detached, unpushed or forked checkout with exit 2 and every reason", async () => {
    const dirty = checkout();
    writeFileSync(path.join(dirty.dir, "new.txt"), "x");
    let r = await bg(dirty, "--dispatch", "--repo", "acme/widgets");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("1 file is modified, staged or untracked");

    const detached = checkout();
    detached.git("checkout", "-q", "--detach");
    r = await bg(detached, "--dispatch", "--repo", "acme/widgets");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is detached");

    const unpushed = checkout();
    unpushed.setState({ branches: { main: "1".repeat(40) } });
    r = await bg(unpushed, "--dispatch", "--repo", "acme/widgets");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`HEAD ${unpushed.sha.slice(0, 12)} is not the head of acme/widgets:main (111111111111)`);

    const fork = checkout("someone/widgets");
    writeFileSync(path.join(fork.dir, "new.txt"), "x");
    r = await bg(fork, "--dispatch", "--repo", "acme/widgets");
    expect(r.code).toBe(2);
    // Every reason, in one line.
    expect(r.stderr).toContain("origin is someone/widgets, not acme/widgets");
    expect(r.stderr).toContain("1 file is modified");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);

    const noGh = checkout();
    noGh.setState({ auth: false });
    r = await bg(noGh, "--dispatch", "--repo", "acme/widgets");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("gh is not installed or not authenticated");
    // Nothing was dispatched by any refused run.
    for (const c of [dirty, detached, unpushed, fork, noGh])
      expect(c.readCalls().some((a) => a[0] === "workflow")).toBe(false);
  }, 60_000);

  test("without --dispatch a checkout that cannot be dispatched runs locally and prints why", async () => {
    const c = checkout();
    writeFileSync(path.join(c.dir, "new.txt"), "x");
    const started = await bg(c, "--repo", "acme/widgets");
    expect(started.code).toBe(0);
    expect(started.stdout).toContain("running locally, not on CI: 1 file is modified");
    expect(started.stdout).toContain("backend=local");
    const followed = await followToEnd(c, started.stdout);
    expect(followed.code).toBe(0);
  }, 60_000);

  test("where CI was not asked for (no --repo, --workflow or preset dispatch) it runs locally and says nothing of CI", async () => {
    const c = checkout();
    writeFileSync(path.join(c.dir, "new.txt"), "x");
    const started = await bg(c);
    expect(started.code).toBe(0);
    expect(started.stdout).not.toContain("not on CI");
    expect(started.stdout).not.toContain("gh ");
    expect(readFileSync(logOf(started.stdout), "utf8")).toContain("backend=local");
    const followed = await followToEnd(c, started.stdout);
    expect(followed.code).toBe(0);
  }, 60_000);
});
