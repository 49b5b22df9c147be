/**
 * What the whole-suite benchmarks share (bench/whole-suite.ts, bench/parity.ts):
 * running a command, cloning a public suite at a commit without the blobs
 * its source lacks, and reading per-test statuses from Bun's JUnit and from
 * shardguard's report.json so the two can be compared.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { XMLParser } from "fast-xml-parser";

export const REPO = path.resolve(import.meta.dir, "..");
export const CLI = path.join(REPO, "runner", "cli-entry.ts");
export const BUN = process.execPath;

/** The positive whole number after `--NAME` on the command line, else `fallback`; throws naming the flag. */
export function intArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive integer`);
  return value;
}

/**
 * Runs a command to its end; throws with its output when it fails and `check` is set.
 * `cpuMs`: user + system time of the process and the descendants it reaped (wait4's rusage).
 */
export function run(
  cmd: string[],
  cwd: string,
  check = true,
): { code: number; ms: number; cpuMs: number; out: string } {
  const t0 = performance.now();
  const r = Bun.spawnSync(cmd, { cwd, env: { ...process.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" });
  const ms = performance.now() - t0;
  const out = `${r.stdout?.toString() ?? ""}${r.stderr?.toString() ?? ""}`;
  if (check && r.exitCode !== 0) throw new Error(`${cmd.join(" ")} exited ${r.exitCode}:\n${out.slice(-3000)}`);
  const cpuMs = r.resourceUsage ? Number(r.resourceUsage.cpuTime.user + r.resourceUsage.cpuTime.system) / 1000 : NaN;
  return { code: r.exitCode ?? -1, ms, cpuMs, out };
}

/**
 * Clones SOURCE (a git URL or directory) at COMMIT into a temp dir without the blobs the source lacks, and installs
 * its dependencies.
 */
export function setUp(SOURCE: string, COMMIT: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "sg-whole-suite-"));
  run(["git", "clone", "-q", "--no-checkout", SOURCE, dir], os.tmpdir());
  const listed = run(["git", "ls-tree", "-r", COMMIT], dir).out.trim().split("\n");
  const probe = spawnSync("git", ["cat-file", "--batch-check"], {
    cwd: dir,
    input: listed.map((l) => l.split(/\s+/)[2]).join("\n"),
    encoding: "utf8",
  });
  const missing = new Set(
    probe.stdout
      .split("\n")
      .filter((l) => l.endsWith(" missing"))
      .map((l) => l.split(" ")[0]),
  );
  const files = listed.filter((l) => !missing.has(l.split(/\s+/)[2])).map((l) => l.slice(l.indexOf("\t") + 1));
  run(["git", "reset", "-q", COMMIT], dir);
  for (let i = 0; i < files.length; i += 500) run(["git", "checkout", COMMIT, "--", ...files.slice(i, i + 500)], dir);
  if (missing.size > 0)
    console.log(
      `set-up: ${missing.size} blob(s) absent from the source, left out (their tests fail the same way in every run)`,
    );
  run([BUN, "install", "--frozen-lockfile", "--ignore-scripts"], dir);
  return dir;
}

export type Statuses = Map<string, string[]>;

/** file > describe > … > test → statuses, from Bun's own JUnit (nested suites per describe). */
export function bunStatuses(xmlFile: string): Statuses {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: "",
    htmlEntities: true,
    trimValues: false,
    isArray: (name) => name === "testsuite" || name === "testcase",
  });
  const doc = parser.parse(readFileSync(xmlFile, "utf8"));
  const out: Statuses = new Map();
  type Suite = { name: string; file?: string; testsuite?: Suite[]; testcase?: Case[] };
  type Case = { name: string; failure?: unknown; error?: unknown; skipped?: unknown };
  const walk = (suite: Suite, file: string, names: string[]) => {
    for (const c of suite.testcase ?? []) {
      const status =
        c.failure !== undefined || c.error !== undefined ? "failed" : c.skipped !== undefined ? "skipped" : "passed";
      add(out, `${file} > ${[...names, c.name].join(" > ")}`, status);
    }
    for (const s of suite.testsuite ?? []) walk(s, file, [...names, s.name]);
  };
  for (const top of (doc.testsuites?.testsuite ?? []) as Suite[]) walk(top, top.file ?? top.name, []);
  return out;
}

/** The same keys from shardguard's report.json; todo counts as skipped, as Bun's JUnit writes it. */
export function shardguardStatuses(reportFile: string): Statuses {
  const report = JSON.parse(readFileSync(reportFile, "utf8")) as {
    shards: { tests: { file: string; name: string; status: string; synthetic: boolean }[] }[];
  };
  const out: Statuses = new Map();
  for (const shard of report.shards)
    for (const t of shard.tests) {
      if (t.synthetic) continue;
      add(out, `${t.file} > ${t.name}`, t.status === "todo" ? "skipped" : t.status === "flaky" ? "passed" : t.status);
    }
  return out;
}

export function add(map: Statuses, key: string, status: string): void {
  const list = map.get(key) ?? [];
  list.push(status);
  list.sort();
  map.set(key, list);
}

/**
 * Keys whose statuses differ between a and b (a key missing on one side counts), optionally only keys `keep` accepts.
 */
export function differences(a: Statuses, b: Statuses, keep: (key: string) => boolean = () => true): string[] {
  const keys = new Set([...a.keys(), ...b.keys()]);
  return [...keys]
    .filter(keep)
    .filter((k) => (a.get(k) ?? []).join() !== (b.get(k) ?? []).join())
    .map((k) => `${k}: ${(a.get(k) ?? ["absent"]).join(",")} vs ${(b.get(k) ?? ["absent"]).join(",")}`);
}
