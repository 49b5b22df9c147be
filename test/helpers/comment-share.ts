/** Comment lines as a share of non-blank lines, per folder of runner/ (and in all), worst files first. */
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { codeLines } from "./layers.ts";
const prefix = process.argv[2] ?? "runner/";
const files = execSync("git ls-files 'runner/*.ts'", { encoding: "utf8" })
  .trim()
  .split("\n")
  .filter((f) => f.startsWith(prefix));
let nonBlank = 0;
let code = 0;
const rows: [number, number, string][] = [];
for (const f of files) {
  const text = readFileSync(f, "utf8");
  const nb = text.split("\n").filter((l) => l.trim()).length;
  const c = codeLines(f, text);
  nonBlank += nb;
  code += c;
  rows.push([nb - c, nb, f]);
}
rows.sort((a, b) => b[0] - a[0]);
for (const [comments, nb, f] of rows.slice(0, 12))
  console.log(`${((100 * comments) / nb).toFixed(0)}%\t${comments}\t${f}`);
console.log(
  `${prefix}: ${(((nonBlank - code) / nonBlank) * 100).toFixed(1)}% comment lines ` +
    `(${nonBlank - code} of ${nonBlank}); at 20% at most ${Math.floor(0.25 * code)}`,
);
