/**
 * The machine-wide run lock, with real separate processes: `bun -e` children
 * take the lock and hold it while this process (or another child) waits.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import {
  acquireRunLock,
  LockAbortedError,
  lockWaitMessage,
  validateLockName,
  type LockHolder,
} from "../runner/engine/lock.ts";
import { REPO, removeSuites, tempDir } from "./helpers/cli.ts";

const LOCK_MODULE = path.join(REPO, "runner", "engine", "lock.ts");
const children: Subprocess[] = [];

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  removeSuites();
});

const lockDir = (): string => tempDir("sg-lock-");

/**
 * Child modes: `hold` takes the lock and keeps it until a line arrives on
 * stdin (then releases and exits 0); `exit` takes it and exits without
 * releasing; `stress` takes and releases it ROUNDS times, appending
 * "in PID" / "out PID" lines to LOG while it holds it.
 */
const CHILD = `
import { appendFileSync } from "node:fs";
import { acquireRunLock, lockWaitMessage } from ${JSON.stringify(LOCK_MODULE)};
const { LOCK_DIR: dir, LOCK_NAME: name, MODE: mode, LOG: log } = process.env;
const pollMs = Number(process.env.POLL ?? 200);
const take = () => acquireRunLock(name, { dir, pollMs, onWait: (h) => console.log(lockWaitMessage(name, h)) });
if (mode === "stress") {
  for (let i = 0; i < Number(process.env.ROUNDS); i++) {
    const lock = await take();
    appendFileSync(log, "in " + process.pid + "\\n");
    await Bun.sleep(Math.random() * 15);
    appendFileSync(log, "out " + process.pid + "\\n");
    await lock.release();
  }
  process.exit(0);
}
const lock = await take();
console.log("held " + process.pid);
if (mode === "exit") process.exit(0);
for await (const _ of console) {
  await lock.release();
  console.log("released");
  process.exit(0);
}
`;

interface Child {
  proc: Subprocess<"pipe", "pipe", "inherit">;
  lines: string[];
  /** Resolves with the first line matching `re` (already seen or still to come). */
  line(re: RegExp, ms?: number): Promise<string>;
}

function startChild(
  dir: string,
  name: string,
  mode: "hold" | "exit" | "stress",
  env: Record<string, string> = {},
): Child {
  const proc = Bun.spawn([process.execPath, "-e", CHILD], {
    env: { ...process.env, LOCK_DIR: dir, LOCK_NAME: name, MODE: mode, ...env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  children.push(proc);
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  void (async () => {
    let buffer = "";
    for await (const chunk of proc.stdout) {
      buffer += new TextDecoder().decode(chunk);
      let nl: number;
      while ((nl = buffer.indexOf("\n")) !== -1) {
        const l = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        lines.push(l);
        for (const w of [...waiters]) {
          if (w.re.test(l)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(l);
          }
        }
      }
    }
  })();
  return {
    proc,
    lines,
    line(re, ms = 10_000) {
      const seen = lines.find((l) => re.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no line matching ${re} within ${ms} ms; got ${JSON.stringify(lines)}`)),
          ms,
        );
        waiters.push({
          re,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      });
    },
  };
}

function releaseChild(child: Child): void {
  child.proc.stdin.write("release\n");
  child.proc.stdin.flush();
}

describe("between processes", () => {
  test(
    "a second process waits, says so once with the " + "holder's pid and start, and gets the lock on release",
    async () => {
      const dir = lockDir();
      const a = startChild(dir, "lane", "hold");
      await a.line(/^held /);
      const b = startChild(dir, "lane", "hold", { POLL: "50" });
      const waiting = await b.line(/^waiting for lock/);
      expect(waiting).toMatch(
        new RegExp(`^waiting for lock lane held by pid ${a.proc.pid} since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`),
      );
      // Several polls later: still one line, still not held.
      await Bun.sleep(400);
      expect(b.lines).toEqual([waiting]);
      releaseChild(a);
      await a.line(/^released$/);
      await b.line(/^held /, 2_000);
      expect(b.lines.filter((l) => l.startsWith("waiting"))).toHaveLength(1);
      releaseChild(b);
      expect(await b.proc.exited).toBe(0);
    },
  );

  test("a SIGKILLed holder does not block: the waiter takes over within a poll or two", async () => {
    const dir = lockDir();
    const a = startChild(dir, "lane", "hold");
    await a.line(/^held /);
    const b = startChild(dir, "lane", "hold", { POLL: "50" });
    await b.line(/^waiting for lock lane held by pid /);
    const t0 = performance.now();
    a.proc.kill("SIGKILL");
    await b.line(/^held /, 2_000);
    expect(performance.now() - t0).toBeLessThan(1_000);
    releaseChild(b);
    await b.proc.exited;
  });

  test("a holder that exits without releasing frees the lock by exiting", async () => {
    const dir = lockDir();
    const a = startChild(dir, "lane", "exit");
    expect(await a.proc.exited).toBe(0);
    const waits: LockHolder[] = [];
    const lock = await acquireRunLock("lane", { dir, onWait: (h) => waits.push(h) });
    expect(waits).toEqual([]);
    await lock.release();
  });

  test("different names do not block each other", async () => {
    const dir = lockDir();
    const a = startChild(dir, "lane-a", "hold");
    await a.line(/^held /);
    const waits: LockHolder[] = [];
    const lock = await acquireRunLock("lane-b", { dir, onWait: (h) => waits.push(h) });
    expect(waits).toEqual([]);
    await lock.release();
    releaseChild(a);
    await a.proc.exited;
  });

  test("six processes taking turns never hold it at the same time, even when one is SIGKILLed holding it", async () => {
    const dir = lockDir();
    const log = path.join(dir, "log");
    writeFileSync(log, "");
    const victim = startChild(dir, "busy", "hold", { POLL: "10" });
    await victim.line(/^held /);
    const workers = Array.from({ length: 6 }, () =>
      startChild(dir, "busy", "stress", { POLL: "10", ROUNDS: "4", LOG: log }),
    );
    await Bun.sleep(300);
    victim.proc.kill("SIGKILL");
    const codes = await Promise.all(workers.map((w) => w.proc.exited));
    expect(codes).toEqual([0, 0, 0, 0, 0, 0]);
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines).toHaveLength(6 * 4 * 2);
    for (let i = 0; i < lines.length; i += 2) {
      const pid = lines[i]!.slice(3);
      expect([lines[i], lines[i + 1]]).toEqual([`in ${pid}`, `out ${pid}`]);
    }
    // Only the newest generation is kept.
    const left = readdirSync(path.join(dir, "busy")).filter((f) => f.endsWith(".holder"));
    expect(left).toHaveLength(1);
  }, 30_000);
});

describe("in one process", () => {
  test.each(["", ".", "..", "a/b", "a b", "lane\n", "ünïcode", "x".repeat(101), "../escape"])(
    "invalid name %p is refused with one line",
    async (name) => {
      expect(() => validateLockName(name)).toThrow(/^invalid lock name .*: use 1-100 letters, digits/);
      const error = await acquireRunLock(name, { dir: lockDir(), onWait: () => {} }).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).not.toContain("\n");
    },
  );

  test.each(["lane", "ci.paid-tier_2", "A", "x".repeat(100), "..."])("valid name %p", (name) => {
    expect(() => validateLockName(name)).not.toThrow();
  });

  test("creates the directory with mode 0700 and tightens an existing one", async () => {
    const base = path.join(lockDir(), "locks");
    const lock = await acquireRunLock("lane", { dir: base, onWait: () => {} });
    expect(lstatSync(base).mode & 0o777).toBe(0o700);
    expect(lstatSync(path.join(base, "lane")).mode & 0o777).toBe(0o700);
    await lock.release();
    const loose = path.join(lockDir(), "loose");
    mkdirSync(loose, { mode: 0o777 });
    await (await acquireRunLock("lane", { dir: loose, onWait: () => {} })).release();
    expect(lstatSync(loose).mode & 0o777).toBe(0o700);
  });

  test("refuses a lock directory that is a symlink", async () => {
    const real = lockDir();
    const link = path.join(lockDir(), "link");
    symlinkSync(real, link);
    await expect(acquireRunLock("lane", { dir: link, onWait: () => {} })).rejects.toThrow(
      /is not a private directory of this user/,
    );
  });

  test.skipIf(process.getuid?.() !== 0)("refuses a lock directory owned by another user", async () => {
    const foreign = path.join(lockDir(), "foreign");
    mkdirSync(foreign, { mode: 0o700 });
    chownSync(foreign, 65534, 65534);
    await expect(acquireRunLock("lane", { dir: foreign, onWait: () => {} })).rejects.toThrow(/owned by uid 65534/);
  });

  test("taking a lock this process holds throws; after release it can be taken again", async () => {
    const dir = lockDir();
    const lock = await acquireRunLock("lane", { dir, onWait: () => {} });
    await expect(acquireRunLock("lane", { dir, onWait: () => {} })).rejects.toThrow(
      "lock lane is already held by this process",
    );
    await lock.release();
    await lock.release(); // idempotent
    const again = await acquireRunLock("lane", { dir, onWait: () => {} });
    expect(again.since.getTime()).toBeGreaterThanOrEqual(lock.since.getTime());
    await again.release();
  });

  test("aborting the wait rejects with LockAbortedError and leaves the holder in place", async () => {
    const dir = lockDir();
    const a = startChild(dir, "lane", "hold");
    await a.line(/^held /);
    const controller = new AbortController();
    const waits: LockHolder[] = [];
    const pending = acquireRunLock("lane", {
      dir,
      pollMs: 20,
      signal: controller.signal,
      onWait: (h) => waits.push(h),
    });
    await Bun.sleep(150);
    controller.abort();
    const error = await pending.catch((e: Error) => e);
    expect(error).toBeInstanceOf(LockAbortedError);
    expect((error as Error).message).toBe("stopped waiting for lock lane");
    expect(waits.map((h) => h.pid)).toEqual([a.proc.pid]);
    releaseChild(a);
    await a.proc.exited;
  });

  test("a holder file naming this pid but not one of its holds is a dead process's, and is superseded", async () => {
    const dir = lockDir();
    mkdirSync(path.join(dir, "lane"), { recursive: true, mode: 0o700 });
    const record = { pid: process.pid, since: new Date(0).toISOString(), procStart: null, token: "not-ours" };
    writeFileSync(path.join(dir, "lane", "7.holder"), JSON.stringify(record));
    const waits: LockHolder[] = [];
    const lock = await acquireRunLock("lane", { dir, onWait: (h) => waits.push(h) });
    expect(waits).toEqual([]);
    expect(readdirSync(path.join(dir, "lane")).sort()).toEqual(["8.holder"]);
    await lock.release();
  });

  test.skipIf(process.platform !== "linux")(
    "a live pid with another start time is a recycled pid: the lock is free",
    async () => {
      const dir = lockDir();
      mkdirSync(path.join(dir, "lane"), { recursive: true, mode: 0o700 });
      const start = readFileSync("/proc/1/stat", "utf8").split(") ")[1]!.split(" ")[19]!;
      const write = (gen: number, procStart: string) =>
        writeFileSync(
          path.join(dir, "lane", `${gen}.holder`),
          JSON.stringify({ pid: 1, since: "2020-01-01T00:00:00.000Z", procStart, token: "t" }),
        );
      write(0, `${start}1`);
      const lock = await acquireRunLock("lane", { dir, onWait: () => {} });
      await lock.release();

      // The same pid with its real start time is alive: the waiter names it.
      write(5, start);
      const controller = new AbortController();
      const waits: LockHolder[] = [];
      const pending = acquireRunLock("lane", {
        dir,
        pollMs: 20,
        signal: controller.signal,
        onWait: (h) => waits.push(h),
      });
      await Bun.sleep(100);
      controller.abort();
      await expect(pending).rejects.toBeInstanceOf(LockAbortedError);
      expect(waits).toEqual([{ pid: 1, since: new Date("2020-01-01T00:00:00.000Z") }]);
      expect(lockWaitMessage("lane", waits[0]!)).toBe(
        "waiting for lock lane held by pid 1 since 2020-01-01T00:00:00.000Z",
      );
    },
  );
});
