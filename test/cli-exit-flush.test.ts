/** The command's exit waits for its output: a reader slower than the writer still gets every byte. */
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { CLI, makeSuite } from "./helpers/cli.ts";

test("`list` of 3,000 files through a pipe read only after 0.5 s arrives whole (not the pipe's first 64 KiB)", () => {
  const files: Record<string, string> = {};
  const body = 'import { test } from "bun:test";\ntest("t", () => {});\n';
  for (let i = 0; i < 3000; i++) files[`a-test-file-with-a-long-name-${i}.test.ts`] = body;
  const dir = makeSuite(files);
  const direct = spawnSync(process.execPath, [CLI, "list", "--root", dir], { encoding: "utf8", timeout: 60_000 });
  expect(direct.status).toBe(0);
  expect(direct.stdout.length).toBeGreaterThan(200_000);
  // The shell's reader sleeps first, so the CLI reaches its exit with most of its output still queued.
  const script = `"$0" "$1" list --root "$2" | (sleep 0.5; wc -c)`;
  const piped = spawnSync("sh", ["-c", script, process.execPath, CLI, dir], { encoding: "utf8", timeout: 60_000 });
  expect(Number(piped.stdout.trim())).toBe(Buffer.byteLength(direct.stdout));
}, 60_000);
