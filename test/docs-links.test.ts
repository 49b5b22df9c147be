/** Every relative link in README.md and docs/*.md names a file that exists and, after `#`, one of its headings. */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO } from "./helpers/cli.ts";

/** GitHub's anchor of a heading: lower case, link text kept, punctuation but `-` and `_` dropped, spaces to `-`. */
function headingAnchor(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-");
}

/** The anchors of a Markdown file's headings (outside code fences), with GitHub's `-1` suffixes for repeats. */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const anchor = headingAnchor(heading[1]!);
    const n = seen.get(anchor) ?? 0;
    seen.set(anchor, n + 1);
    anchors.add(n === 0 ? anchor : `${anchor}-${n}`);
  }
  return anchors;
}

/** `[text](target)` links of a Markdown file outside code fences and inline code, relative ones only. */
function relativeLinks(file: string): string[] {
  const text = readFileSync(file, "utf8")
    .replace(/^```[\s\S]*?^```/gm, "")
    .replace(/`[^`\n]*`/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t));
}

const DOCS = ["README.md", ...[...new Bun.Glob("docs/*.md").scanSync({ cwd: REPO })].sort()];

test.each(DOCS)("%s: every relative link resolves", (doc) => {
  const from = path.join(REPO, doc);
  const broken = relativeLinks(from).filter((target) => {
    const [file, anchor] = target.split("#") as [string, string | undefined];
    const to = file === "" ? from : path.resolve(path.dirname(from), file);
    if (!existsSync(to)) return true;
    return anchor !== undefined && to.endsWith(".md") && !anchorsOf(to).has(anchor);
  });
  expect(broken).toEqual([]);
});

test("the anchor rule: code, punctuation and links in a heading", () => {
  expect(headingAnchor("One module spawns and kills: `exec/process.ts`")).toBe(
    "one-module-spawns-and-kills-execprocessts",
  );
  expect(headingAnchor("Measured facts ([bun-behaviour.md](bun-behaviour.md))")).toBe("measured-facts-bun-behaviourmd");
});
