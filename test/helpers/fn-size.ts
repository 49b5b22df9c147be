/** Prints every function or method of runner/ and preset/ whose body has over 80 lines of code. */
import { readFileSync } from "node:fs";
import { functionSizes } from "./layers.ts";
import { execSync } from "node:child_process";
const files = execSync("git ls-files 'runner/*.ts' 'preset/*.ts'", { encoding: "utf8" }).trim().split("\n");
for (const f of files)
  for (const s of functionSizes(f, readFileSync(f, "utf8")))
    if (s.codeLines > 80) console.log(s.codeLines, `${f}:${s.line} ${s.name}`);
