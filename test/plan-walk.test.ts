/**
 * The directory walk that stands in for fast-glob in the common case
 * (runner/plan/walk.ts) finds exactly the files fast-glob finds with the
 * plan's options, on a tree of edge cases: every naming, dot entries,
 * ignored directories, symbolic links, names with glob characters.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import fg from "fast-glob";
import { ALWAYS_IGNORED, DEFAULT_PATTERN, planRun } from "../runner/plan/plan.ts";
import { toRealPaths, walkTestFiles } from "../runner/plan/walk.ts";
import { removeSuites, tempDir } from "./helpers/cli.ts";

afterAll(removeSuites);

function edgeTree(): string {
  const root = tempDir("sg-walk-");
  const files = [
    "a.test.ts",
    "b_test.js",
    "c.spec.tsx",
    "d_spec.mjs",
    "e.test.cjs",
    "f.test.jsx",
    "_test.ts",
    "x.spec.test.ts",
    "g.test.TS",
    "h.test.md",
    "helper.ts",
    ".hidden.test.ts",
    ".test.ts",
    "x.test.d.ts",
    "a.test.ts.bak",
    "sp ace.test.ts",
    "ünï.test.ts",
    "weird[1].test.ts",
    "br{a,b}.spec.js",
    "(group).test.ts",
    "!bang.test.ts",
    "+(x).test.ts",
    "sub/deep/deeper/k.test.ts",
    "sub/plain.ts",
    ".dotdir/l.test.ts",
    "sub/.dotdir/m.test.ts",
    "node_modules/pkg/n.test.ts",
    "sub/node_modules/o.test.ts",
    ".git/p.test.ts",
    ".shardguard/q.test.ts",
    "sub/.shardguard/r.test.ts",
    "out/s.test.ts",
    "sub/out2/u.test.ts",
    "outside/v.test.ts",
    "dir.test.ts/t.test.ts",
    "star*dir/w.test.ts",
  ];
  for (const rel of files) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), "");
  }
  symlinkSync(path.join(root, "a.test.ts"), path.join(root, "link.test.ts"));
  symlinkSync(path.join(root, "sub"), path.join(root, "linkdir"));
  symlinkSync(path.join(root, "nowhere"), path.join(root, "broken.test.ts"));
  spawnSync("mkfifo", [path.join(root, "fifo.test.ts")]);
  return root;
}

/** What fast-glob finds with planRun's options, by real path. */
function viaFastGlob(root: string, dir: string, ignore: string[]): string[] {
  const glob = dir === "" ? DEFAULT_PATTERN : `${dir}/${DEFAULT_PATTERN}`;
  return toRealPaths(
    root,
    fg.sync(glob, {
      cwd: root,
      ignore: [...ALWAYS_IGNORED, ...ignore],
      onlyFiles: true,
      dot: false,
      followSymbolicLinks: true,
    }),
  ).sort();
}

describe("walkTestFiles", () => {
  const root = edgeTree();

  test("finds what fast-glob finds from the root, with and without an ignored output directory", () => {
    const all = walkTestFiles(root, "", []).sort();
    expect(all).toEqual(viaFastGlob(root, "", []));
    // The test can fail: the tree's own expectations, in fast-glob's terms.
    expect(all).toContain("_test.ts");
    expect(all).toContain("weird[1].test.ts");
    expect(all).toContain("dir.test.ts/t.test.ts");
    // Links are followed and named by their targets: link.test.ts is a.test.ts, linkdir/ is sub/.
    expect(all).not.toContain("link.test.ts");
    expect(all.some((f) => f.startsWith("linkdir/"))).toBe(false);
    expect(all.some((f) => f.includes("node_modules") || f.startsWith(".") || f.includes("/."))).toBe(false);
    expect(walkTestFiles(root, "", ["out", "sub/out2"]).sort()).toEqual(
      viaFastGlob(root, "", ["out/**", "sub/out2/**"]),
    );
  });

  test("finds what fast-glob finds under a subdirectory", () => {
    expect(walkTestFiles(root, "sub", []).sort()).toEqual(viaFastGlob(root, "sub", []));
    expect(walkTestFiles(root, "sub/deep", []).sort()).toEqual(["sub/deep/deeper/k.test.ts"]);
    expect(walkTestFiles(root, "sub", ["sub/out2"]).sort()).toEqual(viaFastGlob(root, "sub", ["sub/out2/**"]));
  });

  test("planRun gives the same plan whichever way a directory is searched", () => {
    // Plain directories and DIR/** ignores are walked; an ignore with a glob character sends every pattern to
    // fast-glob.
    const walked = planRun({ root, patterns: ["sub", "outside", "."], filesPerShard: 5, ignore: ["out/**"] });
    const globbed = planRun({ root, patterns: ["sub", "outside", "."], filesPerShard: 5, ignore: ["ou[t]/**"] });
    expect(walked.shards).toEqual(globbed.shards);
    // Insertion order is each walker's directory order; only the sorted shards are ordered.
    expect([...walked.included].sort()).toEqual([...globbed.included].sort());
    expect(walked.included.get("sub/deep/deeper/k.test.ts")).toBe(`matches sub (sub/${DEFAULT_PATTERN})`);
    // A glob still goes to fast-glob (it loads on demand).
    expect(planRun({ root, patterns: ["star*/*.test.ts"], filesPerShard: 1 }).shards.map((s) => s.files[0])).toEqual([
      "star*dir/w.test.ts",
    ]);
  });
});

describe("symbolic links: the plan runs what plain `bun test` runs", () => {
  /**
   * A project with every kind of link: to a test file, to a file without a
   * test name, into node_modules, to a directory inside and one outside the
   * root, a loop, a dangling link. Returns the root and the outside directory.
   */
  function linkTree(): { root: string; outside: string } {
    const base = tempDir("sg-links-");
    const root = path.join(base, "project");
    const outside = path.join(base, "elsewhere");
    const test = (name: string) => `import { test } from "bun:test";\ntest(${JSON.stringify(name)}, () => {});\n`;
    const files: Record<string, string> = {
      "project/package.json": "{}\n",
      "project/real/a.test.ts": test("a"),
      "project/lib/helper.ts": test("helper"),
      "project/node_modules/pkg/nm.test.ts": test("nm"),
      "project/shared/s.test.ts": test("s"),
      "project/t/loop/l.test.ts": test("l"),
      "elsewhere/out.test.ts": test("out"),
      "elsewhere/dir/d.test.ts": test("d"),
    };
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(base, rel)), { recursive: true });
      writeFileSync(path.join(base, rel), text);
    }
    symlinkSync("../real/a.test.ts", path.join(root, "t", "a-link.test.ts"));
    symlinkSync("../lib/helper.ts", path.join(root, "t", "helper.test.ts"));
    symlinkSync("../node_modules/pkg/nm.test.ts", path.join(root, "t", "nm.test.ts"));
    symlinkSync("../shared", path.join(root, "t", "shared-link"));
    symlinkSync(path.join(outside, "out.test.ts"), path.join(root, "t", "out.test.ts"));
    symlinkSync(path.join(outside, "dir"), path.join(root, "t", "outdir"));
    symlinkSync("..", path.join(root, "t", "loop", "up"));
    symlinkSync("nowhere.test.ts", path.join(root, "t", "dangling.test.ts"));
    return { root, outside };
  }

  test(
    "Bun 1.4.4 runs each linked file once under its real path; the plan has the same files inside the root and " +
      "names the rest",
    () => {
      const { root, outside } = linkTree();
      const junit = path.join(root, "..", "junit.xml");
      const bun = spawnSync(process.execPath, ["test", "--reporter=junit", `--reporter-outfile=${junit}`], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, CI: "" },
      });
      expect(bun.status).toBe(0);
      const ran = [
        ...new Set([...readFileSync(junit, "utf8").matchAll(/<testsuite name="([^"]+)"[^>]*file=/g)].map((m) => m[1]!)),
      ].sort();
      // What Bun did (measured, docs/bun-behaviour.md): followed every link, real paths (absolute outside the root),
      // once each.
      expect(ran).toEqual([
        path.join(outside, "dir", "d.test.ts"),
        path.join(outside, "out.test.ts"),
        "lib/helper.ts",
        "node_modules/pkg/nm.test.ts",
        "real/a.test.ts",
        "shared/s.test.ts",
        "t/loop/l.test.ts",
      ]);
      for (const patterns of [[], ["t/**/*.test.ts", "real", "shared", "lib/helper.ts", "t/loop"]]) {
        const plan = planRun({ root, patterns, filesPerShard: 1 });
        expect([...plan.included.keys()].sort()).toEqual(ran.filter((f) => !path.isAbsolute(f)));
        const left = plan.excluded
          .filter((e) => e.reason.includes("outside --root"))
          .map((e) => e.file)
          .sort();
        expect(left).toEqual([path.join(outside, "dir", "d.test.ts"), path.join(outside, "out.test.ts")]);
      }
    },
  );

  test("a PATTERN that is a link to a file outside the root is refused by name, not as a missing file", () => {
    const { root } = linkTree();
    expect(() => planRun({ root, patterns: ["t/out.test.ts"], filesPerShard: 1 })).toThrow(
      /"t\/out\.test\.ts" leads through a symbolic link to .*elsewhere\/out\.test\.ts, outside --root/,
    );
    expect(planRun({ root, patterns: ["t/a-link.test.ts"], filesPerShard: 1 }).shards[0]!.files).toEqual([
      "real/a.test.ts",
    ]);
  });
});
