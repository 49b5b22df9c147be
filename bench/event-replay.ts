#!/usr/bin/env bun
/**
 * The runner's per-event cost alone, without a `bun test` child: the
 * messages of one file of N passing tests (found, start, end per test, in
 * Bun 1.4.4's compact form) are sent through a unix socket to
 * `listenForTestEvents`, whose events go to a `TestEventModel` and an
 * `EventJournal` as in runner/exec/shard.ts. A separate process sends them
 * as fast as the socket takes them; the time is from the handshake to the
 * channel's close, with the runner's CPU over the same span.
 *
 * Usage: bun bench/event-replay.ts [--tests 100000] [--rounds 5] [--checkout DIR] [--chunk-frames N]
 * `--checkout` measures another checkout's runner/events (e.g. an export of
 * main) with the same messages, for a before/after in one job.
 * `--chunk-frames N` has the sender write N frames at a time with an
 * event-loop turn between writes, so the runner gets many small reads as
 * from a real child (one read per 1–8 messages, bench/README.md) instead of
 * 64 KiB ones; then the wall time is mostly the sender's, and the runner's
 * CPU is the figure to read.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const opt = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

if (process.argv[2] === "--send") {
  // The sending side: one write of every frame, then end.
  const frames = readFileSync(process.argv[4]!);
  const chunkFrames = Number(process.argv[5] ?? 0);
  const socket = net.connect(process.argv[3]!, async () => {
    if (chunkFrames <= 0) return socket.end(frames);
    let at = 0;
    while (at < frames.length) {
      // Whole frames only: walk N length prefixes.
      let end = at;
      for (let i = 0; i < chunkFrames && end < frames.length; i++) end += 4 + frames.readUInt32BE(end);
      if (!socket.write(frames.subarray(at, end))) await new Promise((r) => socket.once("drain", r));
      else await new Promise((r) => setImmediate(r));
      at = end;
    }
    socket.end();
  });
  socket.on("data", () => {});
} else {
  const tests = Number(opt("tests") ?? 100_000);
  const rounds = Number(opt("rounds") ?? 5);
  const chunkFrames = opt("chunk-frames") ?? "0";
  const checkout = path.resolve(opt("checkout") ?? path.join(import.meta.dir, ".."));
  const { listenForTestEvents } = await import(path.join(checkout, "runner/events/inspector.ts"));
  const { encodeFrame } = await import(path.join(checkout, "runner/events/frames.ts"));
  const { TestEventModel } = await import(path.join(checkout, "runner/events/test-model.ts"));
  const { openJournal } = await import(path.join(checkout, "runner/events/journal.ts"));
  const dir = mkdtempSync(path.join(os.tmpdir(), "sg-bench-replay-"));
  const url = path.join(dir, "t", "many.test.ts");
  const messages: string[] = [];
  for (let id = 1; id <= tests; id++) {
    messages.push(
      JSON.stringify({ method: "TestReporter.found", params: { id, url, line: 2, name: `t${id - 1}`, type: "test" } }),
    );
  }
  for (let id = 1; id <= tests; id++) {
    messages.push(JSON.stringify({ method: "TestReporter.start", params: { id } }));
    messages.push(
      JSON.stringify({ method: "TestReporter.end", params: { id, status: "pass", elapsed: 1000 + (id % 5000) } }),
    );
  }
  const framesPath = path.join(dir, "frames");
  writeFileSync(framesPath, Buffer.concat(messages.map((m) => encodeFrame(m))));
  for (let round = 0; round < rounds; round++) {
    const socketPath = path.join(dir, `s${round}`);
    let arrivedAtMs = performance.now();
    const model = new TestEventModel({ root: dir, files: ["t/many.test.ts"], now: () => arrivedAtMs });
    const journal = await openJournal(path.join(dir, `j${round}.events.jsonl`));
    // As runner/exec/shard.ts wires it (a checkout without `sink`/`onRead` ignores them).
    const channel = listenForTestEvents({
      socketPath,
      connectTimeoutMs: 5_000,
      onEvent: (event: unknown, message: unknown) => {
        model.apply(event);
        journal.append(event, message);
      },
      sink: {
        found: (
          id: number,
          url: string,
          line: number,
          name: string,
          type: string,
          parentId: number | undefined,
          message: Uint8Array,
        ) => {
          model.found(id, url, line, name, type, parentId);
          journal.appendLine(message);
        },
        start: (id: number, message: Uint8Array) => {
          model.start(id);
          journal.appendLine(message);
        },
        end: (id: number, status: string, elapsedNs: number, message: Uint8Array) => {
          model.end(id, status, elapsedNs);
          journal.appendLine(message);
        },
      },
      onRead: () => {
        arrivedAtMs = performance.now();
      },
    });
    const sender = Bun.spawn([process.execPath, import.meta.path, "--send", socketPath, framesPath, chunkFrames], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    await channel.ready;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await channel.closed;
    channel.close();
    await journal.close();
    const cpu = process.cpuUsage(cpu0);
    const ms = performance.now() - t0;
    await sender.exited;
    const { events } = channel.stats();
    process.stdout.write(
      `round ${round + 1}: ${ms.toFixed(0)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU, ` +
        `${events} events, RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB\n`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
}
