/**
 * listDescendants (runner/exec/proc-inspect.ts): the runner's end-of-run list
 * of a shard child's descendants, on real processes. A child forked by a
 * Worker thread belongs to that thread's `children` file, not the main
 * thread's, so a list that read only the main thread would miss it.
 */
import { afterAll, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { listDescendants } from "../runner/exec/proc-inspect.ts";
import { removeSuites, tempDir } from "./helpers/cli.ts";

afterAll(removeSuites);

test.skipIf(process.platform !== "linux")(
  "lists children of the main thread and of a Worker thread, and their children, with group ids",
  async () => {
    const dir = tempDir("sg-desc-");
    writeFileSync(path.join(dir, "worker.ts"), 'const p = Bun.spawn(["sleep", "31"]);\npostMessage(p.pid);\n');
    writeFileSync(
      path.join(dir, "main.ts"),
      'const main = Bun.spawn(["sleep", "30"]);\n' +
        'const shell = Bun.spawn(["sh", "-c", "sleep 32 & wait"]);\n' +
        'const worker = new Worker(new URL("./worker.ts", import.meta.url).href);\n' +
        "const fromWorker = await new Promise((resolve) => (worker.onmessage = (e) => resolve(e.data)));\n" +
        "await Bun.sleep(100);\n" +
        "console.log(JSON.stringify({ main: main.pid, shell: shell.pid, fromWorker }));\n" +
        "await Bun.sleep(30_000);\n",
    );
    const child = spawn(process.execPath, [path.join(dir, "main.ts")], {
      detached: true,
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const line = await new Promise<string>((resolve) =>
        child.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString())),
      );
      const pids = JSON.parse(line) as { main: number; shell: number; fromWorker: number };
      const listed = listDescendants(child.pid!, 100);
      const byPid = new Map(listed.map((d) => [d.pid, d]));
      expect(byPid.get(pids.main)).toEqual({ pid: pids.main, pgid: child.pid!, command: "sleep 30" });
      expect(byPid.get(pids.fromWorker)).toEqual({ pid: pids.fromWorker, pgid: child.pid!, command: "sleep 31" });
      expect(byPid.get(pids.shell)?.command).toBe("sh -c sleep 32 & wait");
      // The shell's own child, one level further down.
      expect(listed.some((d) => d.command === "sleep 32")).toBe(true);
      expect(listed.length).toBe(4);
      // The bound holds.
      expect(listDescendants(child.pid!, 2).length).toBe(2);
    } finally {
      process.kill(-child.pid!, "SIGKILL");
    }
    // A process that is gone has no descendants to list.
    await new Promise((resolve) => child.once("exit", resolve));
    expect(listDescendants(child.pid!, 100)).toEqual([]);
  },
  20_000,
);
