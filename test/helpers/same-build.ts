/**
 * Checks that a change left behaviour alone: every changed .ts/.js file under the given folders
 * builds to the same minified output as at REV (Bun.build with syntax minification folds
 * "a" + "b" into "ab", so splitting a long string over lines passes; imports stay external).
 *   bun test/helpers/same-build.ts REV [FOLDER...]      (default folders: runner preset test bench)
 */
import { execSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { tempDir } from "./cli.ts";
const [rev = "main", ...folders] = process.argv.slice(2);
const where = folders.length > 0 ? folders : ["runner", "preset", "test", "bench"];
const changed = execSync(`git diff --name-only ${rev} -- ${where.join(" ")}`, { encoding: "utf8" })
  .trim()
  .split("\n")
  .filter((f) => /\.(ts|js|mjs)$/.test(f));
const dir = tempDir("same-build-");
async function built(name: string, text: string): Promise<string> {
  const file = path.join(dir, name.replace(/\//g, "__"));
  writeFileSync(file, text);
  const r = await Bun.build({
    entrypoints: [file],
    minify: { syntax: true, whitespace: true },
    target: "bun",
    external: ["*"],
  });
  if (!r.success) return `BUILD FAILED ${r.logs.join("\n")}`;
  return (await r.outputs[0]!.text()).replace(/\/\/ .*\n/g, "");
}
let bad = 0;
for (const f of changed) {
  let before: string;
  try {
    before = execSync(`git show ${rev}:${f}`, { encoding: "utf8", maxBuffer: 1 << 26 });
  } catch {
    console.log(`new file: ${f}`);
    bad++;
    continue;
  }
  const after = readFileSync(f, "utf8");
  if ((await built(f, before)) !== (await built(f, after))) {
    console.log(`BEHAVIOUR MAY DIFFER: ${f}`);
    bad++;
  }
}
rmSync(dir, { recursive: true, force: true });
console.log(bad === 0 ? `same build: ${changed.length} files` : `${bad} file(s) build differently`);
process.exitCode = bad === 0 ? 0 : 1;
