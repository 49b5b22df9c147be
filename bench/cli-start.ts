/**
 * Start-up of the compiled CLI against the sources, as whole processes:
 * `shardguard list` on 300 small test files (P3's tree), run through the
 * `bin` (runner/cli-bin.ts, which runs dist/shardguard.cjs while it matches
 * the sources) and through runner/cli-entry.ts (the sources), alternating,
 * ROUNDS times each. Prints the medians and their ratio (the README's claim).
 *
 *   bun bench/cli-start.ts [ROUNDS]     (default 21)
 *
 * Builds the compiled CLI first when the sources changed since the last build.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildCompiledCli, freshCompiledCli } from "../runner/cli/compiled.ts";

const REPO = path.resolve(import.meta.dir, "..");
const rounds = Number(process.argv[2] ?? 21);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`usage: bun bench/cli-start.ts [ROUNDS], got ${process.argv[2]}`);

if (freshCompiledCli(REPO) === null) await buildCompiledCli(REPO);
const root = mkdtempSync(path.join(os.tmpdir(), "sg-bench-start-"));
for (let i = 0; i < 300; i++) {
  const dir = path.join(root, "test", `d${i % 10}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `f${i}.test.ts`), `import { test } from "bun:test";\ntest("t", () => {});\n`);
}

/** Wall time of one `bun ENTRY list --root ROOT`, ms; throws unless it exits 0. */
function once(entry: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [entry, "list", "--root", root], { stdio: ["ignore", "ignore", "pipe"] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${entry} list exited ${r.status}: ${r.stderr}`);
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const bin = path.join(REPO, "runner", "cli-bin.ts");
const sources = path.join(REPO, "runner", "cli-entry.ts");
const times = { bin: [] as number[], sources: [] as number[] };
once(bin);
once(sources);
for (let i = 0; i < rounds; i++) {
  times.bin.push(once(bin));
  times.sources.push(once(sources));
}
rmSync(root, { recursive: true, force: true });
const b = median(times.bin);
const s = median(times.sources);
console.log(`shardguard list, 300 files, medians of ${rounds} alternating runs:`);
console.log(`  compiled (bin):     ${b.toFixed(1)} ms`);
console.log(`  sources (cli-entry): ${s.toFixed(1)} ms`);
console.log(`  ratio compiled/sources: ${(b / s).toFixed(2)}`);
