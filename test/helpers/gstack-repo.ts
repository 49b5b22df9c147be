/**
 * Builds the gstack-shaped fixture repository (test/fixtures/gstack-repo)
 * as a real git repository in a temp dir, and runs real commands in it.
 *
 * The repository gets `node_modules/shardguard` as a symlink to this
 * checkout, the way `bun add -d shardguard` would provide it, so
 * `shardguard init` writes the same bunfig.toml and entry file a user gets.
 * Fixture files are stored with a `.txt` suffix (this repository's own
 * `bun test` must not run them); the copy drops it.
 */
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { tempDir } from "./cli.ts";

export const REPO = path.resolve(import.meta.dir, "..", "..");
export const BUN = process.execPath;
export const CLI = path.join(REPO, "runner", "cli-entry.ts");
const FIXTURE = path.join(REPO, "test", "fixtures", "gstack-repo");

/** Outcome of one command. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A fixture repository in a temp dir. */
export interface GstackRepo {
  /** The repository (also the project root). */
  dir: string;
  /** Outside the repository: where the fixture tests write ran.jsonl and preflight.log. */
  markers: string;
  /** Runs `argv` in the repository with a clean environment plus `env`. */
  run(argv: readonly string[], env?: Record<string, string>, cwd?: string): Ran;
  /** Runs git; throws when it fails. */
  git(...args: string[]): string;
  /** Commits everything (git add -A). */
  commitAll(message: string): void;
  /** Lines of ran.jsonl, parsed; [] when no paid test ran. */
  ranTests(): RanTest[];
  /** How many times the agent preflight of test/helpers/anthropic-preflight.ts really checked (not skipped). */
  agentPings(): number;
  /** Removes shardguard's output and the markers. */
  clean(): void;
  remove(): void;
}

/** One paid fixture test that ran, as recorded by test/helpers/e2e.ts of the fixture. */
export interface RanTest {
  file: string;
  name: string;
  pid: number;
  argv: string[];
  EVALS: string | null;
  EVALS_TIER: string | null;
  GSTACK_EVAL_DIR: string | null;
  EVALS_PREFLIGHT_OK: string | null;
  EVALS_SELECTION_JSON: string | null;
  SHARDGUARD_SHARD: string | null;
}

let bunBin: string | null = null;

/**
 * A directory for PATH holding `bun` (a link to the Bun running the tests:
 * the npm package's binary is named `bun.exe`, so its own directory does not
 * answer to `bun` in package.json scripts) and `fixture-agent`, the fake
 * agent CLI the fixture's preflight calls (exits with FIXTURE_AGENT_EXIT, default 0).
 */
function bunBinDir(): string {
  // tempDir dirs go with a test file's removeSuites: make it again for the next file.
  if (bunBin && existsSync(bunBin)) return bunBin;
  bunBin = tempDir("sg-bunbin-");
  symlinkSync(BUN, path.join(bunBin, "bun"));
  writeFileSync(path.join(bunBin, "fixture-agent"), '#!/bin/sh\nexit "${FIXTURE_AGENT_EXIT:-0}"\n', { mode: 0o755 });
  return bunBin;
}

/** Variables the outer environment may hold that would change what the fixture does. */
const SCRUB =
  /^(EVALS|EVALS_.*|GSTACK_.*|SHARDGUARD_.*|FIXTURE_.*|BUN_TEST_WORKER_ID|JEST_WORKER_ID|GITHUB_ACTIONS|GITHUB_STEP_SUMMARY|GITHUB_WORKSPACE)$/;

function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SCRUB.test(k)) env[k] = v;
  env.PATH = `${bunBinDir()}${path.delimiter}${env.PATH ?? ""}`;
  env.GIT_AUTHOR_NAME = env.GIT_COMMITTER_NAME = "fixture";
  env.GIT_AUTHOR_EMAIL = env.GIT_COMMITTER_EMAIL = "fixture@example.invalid";
  env.GIT_CONFIG_NOSYSTEM = "1";
  env.GIT_CONFIG_GLOBAL = "/dev/null";
  env.NO_COLOR = "1";
  return { ...env, ...extra };
}

function copyTree(from: string, to: string): void {
  for (const entry of readdirSync(from)) {
    if (entry === "README.md") continue;
    const src = path.join(from, entry);
    if (statSync(src).isDirectory()) {
      copyTree(src, path.join(to, entry));
      continue;
    }
    let name = entry.endsWith(".txt") ? entry.slice(0, -4) : entry;
    if (name === "gitignore") name = ".gitignore";
    mkdirSync(to, { recursive: true });
    copyFileSync(src, path.join(to, name));
  }
}

/**
 * Builds the repository: copy, node_modules/shardguard symlink, `git init`
 * on main, first commit; then `shardguard init --preset gstack-paid` and a
 * second commit (the setup a user would commit).
 */
export function buildGstackRepo(): GstackRepo {
  const base = tempDir("sg-gstack-");
  const dir = path.join(base, "repo");
  const markers = path.join(base, "markers");
  copyTree(FIXTURE, dir);
  mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  symlinkSync(REPO, path.join(dir, "node_modules", "shardguard"), "dir");

  const run = (argv: readonly string[], env: Record<string, string> = {}, cwd: string = dir): Ran => {
    const t0 = performance.now();
    const r = spawnSync(argv[0]!, argv.slice(1), {
      cwd,
      env: cleanEnv({ FIXTURE_MARKER_DIR: markers, ...env }),
      encoding: "utf8",
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", ms: performance.now() - t0 };
  };
  const git = (...args: string[]): string => {
    const r = run(["git", ...args]);
    if (r.code !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
    return r.stdout;
  };
  const repo: GstackRepo = {
    dir,
    markers,
    run,
    git,
    commitAll(message) {
      git("add", "-A");
      git("commit", "-q", "-m", message);
    },
    ranTests() {
      const file = path.join(markers, "ran.jsonl");
      if (!existsSync(file)) return [];
      return readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RanTest);
    },
    agentPings() {
      const file = path.join(markers, "agent-pings.log");
      return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).length : 0;
    },
    clean() {
      rmSync(path.join(dir, ".shardguard"), { recursive: true, force: true });
      rmSync(markers, { recursive: true, force: true });
    },
    remove() {
      rmSync(base, { recursive: true, force: true });
    },
  };
  git("init", "-q", "-b", "main");
  repo.commitAll("fixture");
  const init = run([BUN, CLI, "init", "--preset", "gstack-paid"]);
  if (init.code !== 0) throw new Error(`shardguard init failed: ${init.stdout}${init.stderr}`);
  repo.commitAll("shardguard init");
  return repo;
}
