/** The example of docs/api.md, as test/api-doc.test.ts and test/package.test.ts run it. */
import { readFileSync } from "node:fs";
import path from "node:path";

/** The ```ts program and the ```text output that follow "## Example" in docs/api.md (or `doc`). */
export function apiExample(doc = readFileSync(path.join(import.meta.dir, "..", "..", "docs", "api.md"), "utf8")): {
  program: string;
  output: string;
} {
  const section = doc.slice(doc.indexOf("## Example"));
  const program = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  const output = /```text\n([\s\S]*?)```/.exec(section)?.[1];
  if (!program || !output) throw new Error("docs/api.md: no ts program and text output under ## Example");
  return { program, output };
}
