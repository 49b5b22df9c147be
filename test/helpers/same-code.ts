/**
 * Checks that a change touched comments only: every .ts file under runner/ and preset/ that
 * differs from REV prints the same with comments removed (TypeScript's printer). Usage:
 *   bun test/helpers/same-code.ts [REV]     (default: main)
 */
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import ts from "typescript";
const rev = process.argv[2] ?? "main";
const changed = execSync(`git diff --name-only ${rev} -- runner preset`, { encoding: "utf8" })
  .trim()
  .split("\n")
  .filter((f) => /\.tsx?$/.test(f));
const printer = ts.createPrinter({ removeComments: true });
const bare = (name: string, text: string) =>
  printer.printFile(ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true));
let bad = 0;
for (const f of changed) {
  let before = "";
  try {
    before = execSync(`git show ${rev}:${f}`, { encoding: "utf8", maxBuffer: 1 << 26 });
  } catch {
    console.log(`new file: ${f}`);
    bad++;
    continue;
  }
  let after = "";
  try {
    after = readFileSync(f, "utf8");
  } catch {
    console.log(`deleted: ${f}`);
    bad++;
    continue;
  }
  if (bare(f, before) !== bare(f, after)) {
    console.log(`CODE CHANGED: ${f}`);
    bad++;
  }
}
console.log(bad === 0 ? `comments only: ${changed.length} files` : `${bad} file(s) changed beyond comments`);
process.exitCode = bad === 0 ? 0 : 1;
