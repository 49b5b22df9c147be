/**
 * The child preload counts test starts in a mapped 8-byte file next to the
 * marks file (runner/child/shard-preload.ts, runner/exec/marks.ts), and
 * falls back to appended "s" marks when it cannot map it. Real `bun test`
 * children running the real preload, real SIGKILLs.
 */
import { afterAll, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SHARD_PRELOAD } from "../runner/exec/bun-command.ts";
import { prepareStartCount, readMarks, startCountPath } from "../runner/exec/marks.ts";
import { makeSuite, removeSuites, waitFor, withoutCiVariables } from "./helpers/cli.ts";

afterAll(removeSuites);

/** A test file of `n` passing tests. */
const passing = (n: number) =>
  `import { test } from "bun:test";\nfor (let i = 0; i < ${n}; i++) test("t" + i, () => {});\n`;

/**
 * Runs `bun test --preload <the preload>` on `files` of `dir` with SHARDGUARD_MARKS=`marks`; resolves with the child
 * once it has been spawned.
 */
function runChild(dir: string, files: string[], marks: string) {
  const env = withoutCiVariables(
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SHARDGUARD_"))),
  );
  const child = spawn(process.execPath, ["test", "--preload", SHARD_PRELOAD, ...files.map((f) => path.join(dir, f))], {
    cwd: dir,
    env: { ...env, SHARDGUARD_MARKS: marks, SHARDGUARD_YIELD: "0" },
    stdio: "ignore",
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited };
}

/** Number of "s" bytes in a marks file outside its `f<path>\0` records. */
function sBytes(file: string): number {
  return readFileSync(file, "latin1")
    .replace(/f[^\0]*\0/g, "")
    .split("")
    .filter((c) => c === "s").length;
}

test('a normal run: the mapped count holds every test start, retries included, and no "s" is appended', async () => {
  const dir = makeSuite({
    "a.test.ts": passing(30),
    "b.test.ts":
      'import { test } from "bun:test";\nlet n = 0;\nfor (let i = 0; i < 19; i++) test("t" + i, () => {});\n' +
      'test("retried", () => { if (++n < 3) throw new Error("again"); }, { retry: 2 });\n',
  });
  const marks = path.join(dir, "m.marks");
  prepareStartCount(marks);
  const { exited } = runChild(dir, ["a.test.ts", "b.test.ts"], marks);
  expect(await exited).toEqual({ code: 0, signal: null });
  // 30 + 19 + three attempts of the retried test.
  expect(readFileSync(startCountPath(marks)).readUInt32LE(0)).toBe(52);
  expect(sBytes(marks)).toBe(0);
  expect(await readMarks(marks)).toEqual({
    testsStarted: 52,
    finishedNormally: true,
    descendants: [],
    filesStarted: [path.join(dir, "a.test.ts"), path.join(dir, "b.test.ts")],
    filesLoaded: 0,
  });
}, 30_000);

test("SIGKILL of the child mid-run: the starts before the kill survive in the mapped count", async () => {
  const dir = makeSuite({
    "k.test.ts":
      'import { test } from "bun:test";\nimport { writeFileSync } from "node:fs";\n' +
      'for (let i = 0; i < 40; i++) test("t" + i, () => {});\n' +
      'test("spin", () => { writeFileSync(process.env.READY_FILE!, "1"); for (;;) {} });\n' +
      'test("after", () => {});\n',
  });
  const marks = path.join(dir, "m.marks");
  const ready = path.join(dir, "ready");
  prepareStartCount(marks);
  process.env.READY_FILE = ready;
  let run: ReturnType<typeof runChild>;
  try {
    run = runChild(dir, ["k.test.ts"], marks);
  } finally {
    delete process.env.READY_FILE;
  }
  expect(await waitFor(() => existsSync(ready), 20_000)).toBe(true);
  run.child.kill("SIGKILL");
  expect((await run.exited).signal).toBe("SIGKILL");
  const read = await readMarks(marks);
  expect(read.testsStarted).toBe(41);
  expect(sBytes(marks)).toBe(0); // all 41 in the mapped count
  expect(read.finishedNormally).toBe(false);
  expect(read.filesStarted).toEqual([path.join(dir, "k.test.ts")]);
}, 30_000);

test("the mapping fails (no count file, a 0-byte one, an " +
  '8-byte one): each start appends an "s", counted the same', async () => {
  const dir = makeSuite({ "a.test.ts": passing(25), "b.test.ts": passing(5) });
  for (const countFile of [null, 0, 8]) {
    const marks = path.join(dir, `m${countFile}.marks`);
    if (countFile !== null) writeFileSync(startCountPath(marks), new Uint8Array(countFile));
    const { exited } = runChild(dir, ["a.test.ts", "b.test.ts"], marks);
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(sBytes(marks)).toBe(30);
    const read = await readMarks(marks);
    // An 8-byte file was not mapped (wrong size), so it still reads its first four zero bytes.
    expect([read.testsStarted, read.finishedNormally, read.filesStarted.length]).toEqual([30, true, 2]);
  }
}, 60_000);

test(
  'readMarks adds the count and the "s" marks, and ' + "reads a count file a test replaced within its bounds",
  async () => {
    const dir = makeSuite({});
    const marks = path.join(dir, "m.marks");
    writeFileSync(marks, "f/r/a.test.ts\0sse");
    const count = Buffer.alloc(4);
    count.writeUInt32LE(7);
    writeFileSync(startCountPath(marks), count);
    expect((await readMarks(marks)).testsStarted).toBe(9);
    // Largest value a u32 holds, then garbage after it: only the first four bytes count.
    writeFileSync(
      startCountPath(marks),
      Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.alloc(1024, 0x41)]),
    );
    expect((await readMarks(marks)).testsStarted).toBe(2 ** 32 - 1 + 2);
    // Too short, or not a regular file: no count.
    writeFileSync(startCountPath(marks), Buffer.from([5, 0]));
    expect((await readMarks(marks)).testsStarted).toBe(2);
    const other = path.join(dir, "d.marks");
    writeFileSync(other, "s");
    mkdirSync(startCountPath(other));
    expect((await readMarks(other)).testsStarted).toBe(1);
  },
);
