#!/usr/bin/env bun
/**
 * Per-process floor of the two ways to reach a `bun test` child's inspector,
 * against plain `bun test FILE`, side by side in one job (alternating rounds,
 * medians of whole wall time over N one-test files, `jobs` at a time):
 *
 *   raw      `bun test FILE`
 *   wsPoll   `bun --inspect-wait=ws+unix://<sock> test FILE`; the runner polls
 *            for the socket file every 2 ms, opens a WebSocket (the `ws`
 *            package), sends the three handshake requests (the enables, then
 *            Inspector.initialized once both replied) and reads until close
 *   reverseSequential  the runner listens on `<sock>` first (`Bun.listen({ unix })`)
 *            and spawns `bun --inspect-wait=unix:<sock> test FILE`; the child
 *            dials in; the same handshake in 4-byte big-endian length-prefixed
 *            frames (Inspector.initialized after both enable replies)
 *   reversePipelined  the same, all three requests written at once
 *   reverseBarrierRequests  the same plus the runner's end-of-run requests
 *            (Runtime.evaluate, Runtime.awaitPromise), whose promise no
 *            preload resolves here: what the barrier costs a bare child
 *
 * Each variant also records the mean ms from spawn to "handshake sent"
 * (the child released). No preload, no JUnit, no supervision: the floor of
 * an inspector-based design. Both mechanisms are implemented here on their
 * own, so the script keeps measuring the old one after the runner moved.
 *
 * Usage: bun bench/inspector-floor.ts [--files 200] [--jobs 2] [--rounds 5]
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import WebSocket from "ws";
import { END_OF_RUN_EXPRESSION } from "../runner/events/inspector.ts";
import { intOption } from "./peak-rss.ts";

const opt = intOption;
const FILES = opt("files", 200);
const JOBS = opt("jobs", 2);
const ROUNDS = opt("rounds", 5);
const BUN = process.execPath;

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-floor-"));
mkdirSync(path.join(dir, "t"));
mkdirSync(path.join(dir, "s"), { mode: 0o700 });
const files = Array.from({ length: FILES }, (_, i) => {
  const f = path.join(dir, "t", `f${String(i).padStart(3, "0")}.test.ts`);
  writeFileSync(f, `import { expect, test } from "bun:test";\ntest("one ${i}", () => expect(${i}).toBe(${i}));\n`);
  return f;
});
let socketCounter = 0;
const nextSocket = () => path.join(dir, "s", `${socketCounter++}.sock`);

/** One child per file; `run` resolves when the child exited and its channel closed; returns ms to release. */
async function pool(run: (file: string) => Promise<number>): Promise<{ ms: number; releaseMs: number }> {
  const t0 = performance.now();
  let next = 0;
  let releaseSum = 0;
  const worker = async () => {
    while (next < files.length) releaseSum += await run(files[next++]!);
  };
  await Promise.all(Array.from({ length: JOBS }, worker));
  return { ms: performance.now() - t0, releaseMs: releaseSum / files.length };
}

const exited = (child: ReturnType<typeof spawn>) => new Promise<void>((r) => child.once("exit", () => r()));

async function raw(file: string): Promise<number> {
  await exited(spawn(BUN, ["test", file], { cwd: dir, stdio: "ignore" }));
  return 0;
}

async function wsPoll(file: string): Promise<number> {
  const sock = nextSocket();
  const t0 = performance.now();
  const child = spawn(BUN, [`--inspect-wait=ws+unix://${sock}`, "test", file], { cwd: dir, stdio: "ignore" });
  const done = exited(child);
  let ws: WebSocket | undefined;
  while (!ws) {
    if (!existsSync(sock)) {
      await delay(2);
      continue;
    }
    ws = await new Promise<WebSocket | undefined>((resolve) => {
      const socket = new WebSocket(`ws+unix://${sock}`);
      socket.once("open", () => resolve(socket));
      socket.once("error", () => resolve(undefined));
    });
    if (!ws) await delay(2);
  }
  const socket = ws;
  const closed = new Promise<void>((r) => socket.once("close", () => r()));
  let released = 0;
  await new Promise<void>((resolve) => {
    let replies = 0;
    socket.on("message", (data) => {
      const id = (JSON.parse(String(data)) as { id?: number }).id;
      if ((id === 1 || id === 2) && ++replies === 2) {
        socket.send(JSON.stringify({ id: 3, method: "Inspector.initialized" }));
        released = performance.now() - t0;
        resolve();
      }
    });
    socket.send(JSON.stringify({ id: 1, method: "TestReporter.enable" }));
    socket.send(JSON.stringify({ id: 2, method: "LifecycleReporter.enable" }));
  });
  await done;
  await closed;
  return released;
}

const frame = (message: object) => {
  const body = Buffer.from(JSON.stringify(message), "utf8");
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
};

/**
 * `pipelined`: all three requests in one write; else Inspector.initialized
 * after both enable replies. `barrier`: also the runner's end-of-run
 * requests (Runtime.evaluate, then Runtime.awaitPromise on its reply; with
 * no preload the promise never settles and the child just ends).
 */
async function reverseWith(file: string, pipelined: boolean, barrier = false): Promise<number> {
  const sock = nextSocket();
  const t0 = performance.now();
  let released = 0;
  let received = 0;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const server = Bun.listen<undefined>({
    unix: sock,
    socket: {
      open(socket) {
        const enables = [
          frame({ id: 1, method: "TestReporter.enable" }),
          frame({ id: 2, method: "LifecycleReporter.enable" }),
        ];
        if (!pipelined) {
          socket.write(Buffer.concat(enables));
          return;
        }
        // All three at once: Bun handles them in order, the enables before the release.
        const end = barrier
          ? [frame({ id: 4, method: "Runtime.evaluate", params: { expression: END_OF_RUN_EXPRESSION } })]
          : [];
        socket.write(Buffer.concat([...enables, frame({ id: 3, method: "Inspector.initialized" }), ...end]));
        released = performance.now() - t0;
      },
      data(socket, chunk) {
        if (barrier) {
          const objectId = /"objectId":"((?:[^"\\]|\\.)*)"/.exec(chunk.toString("utf8"))?.[1];
          if (objectId)
            socket.write(
              frame({
                id: 5,
                method: "Runtime.awaitPromise",
                params: { promiseObjectId: JSON.parse(`"${objectId}"`) },
              }),
            );
        }
        // Sequential handshake: the two replies are the first 2 × 24 bytes ({"result":{},"id":N} framed).
        if (pipelined || released > 0) return;
        received += chunk.length;
        if (received >= 48) {
          socket.write(frame({ id: 3, method: "Inspector.initialized" }));
          released = performance.now() - t0;
        }
      },
      close() {
        resolveClosed();
      },
    },
  });
  const child = spawn(BUN, [`--inspect-wait=unix:${sock}`, "test", file], { cwd: dir, stdio: "ignore" });
  await exited(child);
  await closed;
  server.stop(true);
  rmSync(sock, { force: true });
  return released;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const variants: Record<string, (file: string) => Promise<number>> = {
  raw,
  wsPoll,
  reverseSequential: (file) => reverseWith(file, false),
  reversePipelined: (file) => reverseWith(file, true),
  reverseBarrierRequests: (file) => reverseWith(file, true, true),
};
const samples: Record<string, { ms: number; releaseMs: number }[]> = Object.fromEntries(
  Object.keys(variants).map((k) => [k, []]),
);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(variants)) samples[name]!.push(await pool(run));
  process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
}
const rawMs = median(samples.raw!.map((s) => s.ms));
console.log(
  `bun ${Bun.version}, ${os.cpus().length} cores, ${FILES} one-test files, jobs ${JOBS}, ${ROUNDS} rounds, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log("| variant | median wall | × raw | per file | spawn → released (mean) |");
console.log("|---|---|---|---|---|");
for (const [name, list] of Object.entries(samples)) {
  const ms = median(list.map((s) => s.ms));
  const rel = name === "raw" ? "—" : `${median(list.map((s) => s.releaseMs)).toFixed(1)} ms`;
  console.log(
    `| ${name} | ${(ms / 1000).toFixed(2)} s | ${(ms / rawMs).toFixed(2)}× | ${((ms * JOBS) / FILES).toFixed(1)} ` +
      `ms | ${rel} |`,
  );
}
rmSync(dir, { recursive: true, force: true });
