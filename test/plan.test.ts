/** Planning: discovery with Bun's naming, dedupe, stable order, shards and slugs. */
import { afterAll, describe, expect, test } from "bun:test";
import { ConfigError } from "../runner/config/settings-schema.ts";
import { groupIntoShards, planRun, shardSlug } from "../runner/plan/plan.ts";
import { makeSuite, removeSuites } from "./helpers/cli.ts";

const tree = () =>
  makeSuite({
    "b.test.ts": "",
    "a_test.js": "",
    "sub/c.spec.tsx": "",
    "sub/d_spec.mjs": "",
    "helper.ts": "",
    "notes.test.md": "",
    "node_modules/pkg/x.test.ts": "",
    ".shardguard/logs/y.test.ts": "",
  });

describe("planRun", () => {
  test("finds Bun's test-file names, skips node_modules and output, sorts byte-wise", () => {
    const plan = planRun({ root: tree(), patterns: [], filesPerShard: 1 });
    expect(plan.shards.map((s) => s.files[0])).toEqual(["a_test.js", "b.test.ts", "sub/c.spec.tsx", "sub/d_spec.mjs"]);
    expect(plan.shards.map((s) => s.index)).toEqual([1, 2, 3, 4]);
  });

  test("overlapping patterns are deduplicated, and each file says why it is in", () => {
    const plan = planRun({ root: tree(), patterns: ["sub", "sub/*.tsx", "b.test.ts"], filesPerShard: 10 });
    expect(plan.shards).toHaveLength(1);
    expect(plan.shards[0]!.files).toEqual(["b.test.ts", "sub/c.spec.tsx", "sub/d_spec.mjs"]);
    expect(plan.included.get("sub/c.spec.tsx")).toContain("matches sub");
    expect(plan.included.get("b.test.ts")).toBe("matches b.test.ts");
  });

  test("a pattern matching nothing is listed as excluded; nothing at all is a ConfigError", () => {
    const plan = planRun({ root: tree(), patterns: ["b.test.ts", "missing/*.test.ts"], filesPerShard: 1 });
    expect(plan.excluded.map((e) => e.file)).toEqual(["missing/*.test.ts"]);
    expect(() => planRun({ root: tree(), patterns: ["nothing/**"], filesPerShard: 1 })).toThrow(ConfigError);
    // A path written out that does not exist is a typo, even when other patterns match.
    expect(() => planRun({ root: tree(), patterns: ["b.test.ts", "sub/c.spce.tsx"], filesPerShard: 1 })).toThrow(
      /no test file at "sub\/c.spce.tsx"/,
    );
    expect(() => planRun({ root: makeSuite({ "x.md": "" }), patterns: [], filesPerShard: 1 })).toThrow(
      /no test files matched/,
    );
    // Outside the root, Bun would name the file differently from the plan.
    const root = tree();
    expect(() => planRun({ root, patterns: ["../elsewhere/*.test.ts"], filesPerShard: 1 })).toThrow(
      /reaches outside --root/,
    );
    expect(() => planRun({ root, patterns: ["/tmp/other.test.ts"], filesPerShard: 1 })).toThrow(
      /reaches outside --root/,
    );
  });

  test(
    "an existing file or directory whose name holds glob characters is meant as written (route files such as " +
      "[id].test.ts)",
    () => {
      const root = makeSuite({
        "t/[id].test.ts": "",
        "t/i.test.ts": "",
        "t/a{b,c}.test.ts": "",
        "t/ab.test.ts": "",
        "r/(group)/x.test.ts": "",
        "r/y.test.ts": "",
      });
      const files = (pattern: string) =>
        planRun({ root, patterns: [pattern], filesPerShard: 10 }).shards.flatMap((s) => s.files);
      expect(files("t/[id].test.ts")).toEqual(["t/[id].test.ts"]);
      expect(files("./t/a{b,c}.test.ts")).toEqual(["t/a{b,c}.test.ts"]);
      expect(files(`${root}/t/[id].test.ts`)).toEqual(["t/[id].test.ts"]);
      expect(files("r/(group)")).toEqual(["r/(group)/x.test.ts"]);
      // A glob that names no existing path stays a glob.
      expect(files("t/[i].test.ts")).toEqual(["t/i.test.ts"]);
      expect(files("t/a{b,x}.test.ts")).toEqual(["t/ab.test.ts"]);
    },
  );
});

describe("shards and slugs", () => {
  test("files-per-shard groups in order", () => {
    const shards = groupIntoShards(["a", "b", "c", "d", "e"], 2);
    expect(shards.map((s) => s.files)).toEqual([["a", "b"], ["c", "d"], ["e"]]);
  });

  test("slugs are stable, safe and distinct for long names", () => {
    expect(shardSlug(["test/skill-e2e-review.test.ts"])).toBe("test-skill-e2e-review");
    expect(shardSlug(["a.test.ts", "b.test.ts", "c.test.ts"])).toBe("a-and-2-more");
    const long1 = shardSlug([`${"x".repeat(100)}1.test.ts`]);
    const long2 = shardSlug([`${"x".repeat(100)}2.test.ts`]);
    expect(long1.length).toBeLessThanOrEqual(80);
    expect(long1).not.toBe(long2);
    expect(shardSlug(["dir with spaces/ü.test.ts"])).toMatch(/^[a-z0-9-]+$/);
    // Within one plan, slugs never collide (they name per-shard directories).
    const shards = groupIntoShards(
      ["test/skill-e2e-Foo_bar.test.ts", "test/skill-e2e-foo-bar.test.ts", "test/other.test.ts"],
      1,
    );
    const slugs = shards.map((s) => s.slug);
    expect(new Set(slugs).size).toBe(3);
    expect(slugs[2]).toBe("test-other");
    expect(slugs[0]).toMatch(/^test-skill-e2e-foo-bar-[0-9a-f]{8}$/);
    expect(
      groupIntoShards(["test/skill-e2e-Foo_bar.test.ts", "test/skill-e2e-foo-bar.test.ts"], 1).map((s) => s.slug),
    ).toEqual(slugs.slice(0, 2));
  });
});

afterAll(removeSuites);
