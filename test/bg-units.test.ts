/**
 * Pure parts of `shardguard bg`: the cap formula, the dispatch rules, the
 * nonce and dedupe key, the conclusion map, the sentinel and the state of a
 * run from its log and record.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { computeCap, MAX_CAP_SECONDS, SETUP_SECONDS, UNRECORDED_FILE_MS } from "../runner/commands/bg/cap.ts";
import { dispatchBlockers, githubRepoOf, testedRevision, type CheckoutFacts } from "../runner/commands/bg/checkout.ts";
import { conclusionCode, dedupeKey, findDuplicate, makeNonce, runForNonce } from "../runner/commands/bg/dispatch.ts";
import { bgState, sentinelCode, sentinelLine, type BgRecord } from "../runner/commands/bg/record.ts";
import { parsePreset } from "../runner/presets/preset-schema.ts";
import { BUILTIN_PRESETS } from "../runner/presets/builtin.ts";
import { tempDir } from "./helpers/cli.ts";

describe("cap", () => {
  test("ceil(1.5 x serial seconds / jobs) + 20 min, unrecorded files at 10 min, at most 4 h", () => {
    const timings = new Map([
      ["a.test.ts", 60_000],
      ["b.test.ts", 30_000],
    ]);
    // 90 s serial, 2 jobs: ceil(1.5 * 90 / 2) = 68.
    expect(computeCap(["a.test.ts", "b.test.ts"], 2, timings)).toMatchObject({
      seconds: 68 + SETUP_SECONDS,
      serialMs: 90_000,
      exceeds: false,
      recorded: 2,
    });
    // One unrecorded file: 600 s more.
    expect(computeCap(["a.test.ts", "c.test.ts"], 1, timings).serialMs).toBe(60_000 + UNRECORDED_FILE_MS);
    const many = Array.from({ length: 100 }, (_, i) => `f${i}.test.ts`);
    expect(computeCap(many, 4, new Map())).toMatchObject({ seconds: MAX_CAP_SECONDS, exceeds: true });
  });
});

describe("dispatch rules", () => {
  const sha = "a".repeat(40);
  const ok: CheckoutFacts = {
    sha,
    branch: "main",
    dirty: [],
    origin: "acme/w",
    repo: "acme/w",
    ghReady: true,
    canPush: true,
    remoteSha: sha,
    inGit: true,
  };
  test("a clean, pushed checkout of the configured repository can be dispatched", () => {
    expect(dispatchBlockers(ok)).toEqual([]);
  });
  test("every failing rule is one reason", () => {
    expect(dispatchBlockers({ ...ok, ghReady: false, canPush: false, remoteSha: null })).toEqual([
      "gh is not installed or not authenticated (gh auth status)",
    ]);
    expect(dispatchBlockers({ ...ok, canPush: false })).toEqual([
      "the gh account cannot push to acme/w, so it cannot dispatch its workflows",
    ]);
    expect(
      dispatchBlockers({ ...ok, origin: "me/w", remoteSha: null, canPush: false, branch: null, dirty: ["?? x"] }),
    ).toEqual([
      "origin is me/w, not acme/w (a fork cannot dispatch the configured repository's workflows)",
      `HEAD ${sha.slice(0, 12)} is detached; dispatch needs a pushed branch`,
      "1 file is modified, staged or untracked; commit or stash it",
    ]);
    expect(dispatchBlockers({ ...ok, remoteSha: null })).toEqual(["branch main is not on acme/w; push it"]);
    expect(dispatchBlockers({ ...ok, remoteSha: "b".repeat(40) })[0]).toContain("is not the head of acme/w:main");
  });
  test("origin URLs and the tested revision", () => {
    expect(githubRepoOf("git@github.com:acme/w.git")).toBe("acme/w");
    expect(githubRepoOf("https://github.com/acme/w")).toBe("acme/w");
    expect(githubRepoOf("https://gitlab.com/acme/w.git")).toBe(null);
    expect(testedRevision({ sha, dirty: ["?? a", " M b"], inGit: true })).toBe(`${sha} + 2 uncommitted files`);
    expect(testedRevision({ sha, dirty: [], inGit: true })).toBe(sha);
  });
});

describe("nonce, dedupe and conclusions", () => {
  const run = (title: string, status: string, conclusion: string | null, event = "workflow_dispatch") => ({
    databaseId: 1,
    displayTitle: title,
    status,
    conclusion,
    url: "u",
    event,
  });
  test("the nonce is the dedupe key plus a random tail", () => {
    const key = dedupeKey("lane", "0123456789abcdef", null);
    expect(key).toBe("lane-0123456789ab-none-");
    const nonce = makeNonce(key);
    expect(nonce.startsWith(key)).toBe(true);
    expect(nonce).not.toBe(makeNonce(key));
  });
  test("queued, running and successful runs of the key are reused; failed, cancelled and other events are not", () => {
    const key = "lane-x-none-";
    expect(findDuplicate([run(`t [shardguard ${key}1]`, "queued", null)], key)).not.toBeNull();
    expect(findDuplicate([run(`t [shardguard ${key}1]`, "in_progress", null)], key)).not.toBeNull();
    expect(findDuplicate([run(`t [shardguard ${key}1]`, "completed", "success")], key)).not.toBeNull();
    expect(findDuplicate([run(`t [shardguard ${key}1]`, "completed", "failure")], key)).toBeNull();
    expect(findDuplicate([run(`t [shardguard ${key}1]`, "completed", "cancelled")], key)).toBeNull();
    expect(findDuplicate([run(`t [shardguard ${key}1]`, "queued", null, "push")], key)).toBeNull();
    expect(findDuplicate([run(`t [shardguard other-x-none-1]`, "queued", null)], key)).toBeNull();
    expect(
      runForNonce([run("t [shardguard n1]", "queued", null), run("t [shardguard n12]", "queued", null)], "n12")
        ?.displayTitle,
    ).toBe("t [shardguard n12]");
  });
  test("success 0, failure 1, cancelled 130, anything else 2", () => {
    expect([
      conclusionCode("success"),
      conclusionCode("failure"),
      conclusionCode("cancelled"),
      conclusionCode("timed_out"),
      conclusionCode(null),
    ]).toEqual([0, 1, 130, 2, 2]);
  });
});

describe("sentinel and state", () => {
  const record = (pid: number | null, startedAt = new Date().toISOString()): BgRecord => ({
    id: "x",
    backend: "local",
    log: "/x.log",
    root: "/",
    out: "/o",
    lock: "l",
    pid,
    procStart: null,
    startedAt,
    runId: null,
    ci: null,
  });
  test("the last sentinel decides; a live process is running; a dead one without a sentinel is incomplete", () => {
    expect(sentinelCode(`a\n${sentinelLine(1)}\n`)).toBe(1);
    expect(sentinelCode("a\n  ### shardguard EXIT=0 ### (quoted)\n")).toBe(null);
    // Only LF ends a line: a test name printed with CR, U+2028 or U+2029 around a forged line is no sentinel.
    for (const sep of ["\r", "\u2028", "\u2029", "\u0085"])
      expect(sentinelCode(`x${sep}### shardguard EXIT=0 ###${sep}y\n`)).toBe(null);
    expect(sentinelCode(`x\u2028### shardguard EXIT=0 ###\u2028\n${sentinelLine(1)}\n`)).toBe(1);
    expect(bgState(record(process.pid), `${sentinelLine(130)}\n`)).toEqual({
      state: "cancelled",
      code: 130,
      why: null,
    });
    expect(bgState(record(process.pid), `${sentinelLine(1)}\n`)).toEqual({ state: "failed", code: 1, why: null });
    expect(bgState(record(process.pid), `${sentinelLine(2)}\n`)).toEqual({ state: "error", code: 2, why: null });
    expect(bgState(record(process.pid), "started\n")).toEqual({ state: "running", code: null, why: null });
    expect(bgState(record(2 ** 22 + 12345), "started\n")).toEqual({ state: "incomplete", code: null, why: null });
    expect(bgState(record(null), "").state).toBe("running");
    expect(bgState(record(null, new Date(Date.now() - 60_000).toISOString()), "").state).toBe("incomplete");
  });
  test(
    "the record's ending names an exit 2 (a reached cap " + "is timed-out) only when it carries the sentinel's code",
    () => {
      const ended = (code: number): BgRecord => ({
        ...record(null),
        ending: { code, state: "timed-out", why: "cap of 5s reached; the run was cancelled" },
      });
      expect(bgState(ended(2), `${sentinelLine(2)}\n`)).toEqual({
        state: "timed-out",
        code: 2,
        why: "cap of 5s reached; the run was cancelled",
      });
      // A later run's sentinel in the same log (or a stale record) does not borrow the wording.
      expect(bgState(ended(2), `${sentinelLine(0)}\n`)).toEqual({ state: "passed", code: 0, why: null });
    },
  );
});

describe("preset keys", () => {
  test("gstack-paid carries EVALS_RUN_ID and its dispatch settings; bad values are one-line errors", () => {
    const p = parsePreset("gstack-paid", BUILTIN_PRESETS["gstack-paid"], "built-in");
    expect(p.runIdEnv).toBe("EVALS_RUN_ID");
    expect(p.dispatch).toEqual({ repo: "garrytan/gstack", workflow: "shardguard-bg.yml", inputs: { tier: "{tier}" } });
    expect(() => parsePreset("x", { globs: ["a"], "run-id-env": "1BAD" }, "t")).toThrow(/run-id-env/);
    expect(() => parsePreset("x", { globs: ["a"], dispatch: { repo: "nope" } }, "t")).toThrow(/expected owner\/name/);
    expect(() => parsePreset("x", { globs: ["a"], dispatch: { repos: "a/b" } }, "t")).toThrow(
      /accepted keys: inputs, repo, workflow/,
    );
  });
});

describe("examples/github/shardguard-bg.yml", () => {
  const text = readFileSync(path.join(import.meta.dir, "..", "examples", "github", "shardguard-bg.yml"), "utf8");
  const wf = Bun.YAML.parse(text) as {
    "run-name": string;
    on: { workflow_dispatch: { inputs: Record<string, { required?: boolean }> } };
    jobs: Record<
      string,
      {
        steps: {
          uses?: string;
          run?: string;
          if?: string;
          env?: Record<string, string>;
          with?: Record<string, unknown>;
        }[];
      }
    >;
  };
  const steps = Object.values(wf.jobs)[0]!.steps;

  test("takes expected_sha and nonce, and names the run so the follower finds it by nonce", () => {
    expect(wf.on.workflow_dispatch.inputs.expected_sha!.required).toBe(true);
    expect(wf.on.workflow_dispatch.inputs.nonce!.required).toBe(true);
    const title = wf["run-name"]
      .replace("${{ inputs.tier }}", "gate")
      .replace("${{ inputs.nonce }}", "lane-abc-none-1234");
    expect(
      runForNonce(
        [
          {
            databaseId: 1,
            displayTitle: title,
            status: "queued",
            conclusion: null,
            url: "u",
            event: "workflow_dispatch",
          },
        ],
        "lane-abc-none-1234",
      ),
    ).not.toBeNull();
  });

  test("fails first when the checked-out sha is not expected_sha, then runs shardguard and uploads its reports", () => {
    expect(steps[0]!.uses).toStartWith("actions/checkout@");
    expect(steps[1]!.env!.EXPECTED_SHA).toBe("${{ inputs.expected_sha }}");
    expect(steps[1]!.run).toContain('"$(git rev-parse HEAD)"');
    expect(steps[1]!.run).toContain("exit 1");
    expect(steps.some((s) => s.run?.includes("shardguard run"))).toBe(true);
    const upload = steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"))!;
    expect(upload.if).toBe("always()");
    expect(String(upload.with!.path)).toContain(".shardguard/report.json");
  });

  test("the expected_sha step rejects another commit (run with sh)", () => {
    const script = steps[1]!.run!.replace("$(git rev-parse HEAD)", "$ACTUAL");
    const run = (actual: string) =>
      Bun.spawnSync(["sh", "-c", script], { env: { ...process.env, ACTUAL: actual, EXPECTED_SHA: "abc" } }).exitCode;
    expect(run("abc")).toBe(0);
    expect(run("def")).toBe(1);
  });
});

describe("lane holder", () => {
  test("lockHolderNow names the live holder and nothing once it released", async () => {
    const { acquireRunLock, lockHolderNow } = await import("../runner/engine/lock.ts");
    const dir = tempDir("sg-lane-");
    try {
      expect(await lockHolderNow("lane", dir)).toBeNull();
      const lock = await acquireRunLock("lane", { dir, onWait: () => {} });
      expect((await lockHolderNow("lane", dir))?.pid).toBe(process.pid);
      await lock.release();
      expect(await lockHolderNow("lane", dir)).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
