/**
 * Built-in presets, as raw data in the same shape as a
 * `[shardguard.presets.NAME]` table of bunfig.toml (validated by
 * preset-schema.ts when loaded).
 *
 * `gstack-paid` reproduces the paid (gate / periodic) tier runner of the
 * gstack project (MIT; behaviour described in docs/presets.md):
 * - the paid files are the globs of its `test:gate` script;
 * - the tier comes from `--tier` or `EVALS_TIER` and must be `gate` or
 *   `periodic`; `gate` when neither names one, except on a taken-over
 *   `bun test FILE...` line, which keeps its tierless meaning; a file is left out only when it guards the whole file with
 *   the other tier (`EVALS_TIER === '<tier>'`, `describeE2ETier('<tier>')`,
 *   `e2eTierEnabled('<tier>')`);
 * - `EVALS_JOBS` is the number of shard processes, `EVALS_CONCURRENCY` the
 *   `--max-concurrency` inside each shard (4 × 4 keeps the in-flight agent
 *   sessions near the legacy single process's 15), and the two are never
 *   mixed up;
 * - each shard runs `--retry 1 --concurrent --max-concurrency=N
 *   --timeout=<shard timeout ms>`, with `EVALS=1`, `EVALS_TIER` and its own
 *   `GSTACK_EVAL_DIR=<base>/shards/<file stem>`, `<base>` being
 *   `GSTACK_EVAL_DIR`, else test/helpers/eval-store.ts `getProjectEvalDir()`
 *   (where gstack's eval tools read), else `.shardguard/evals`;
 * - diff-based selection reads `test/helpers/touchfiles.ts`
 *   (`E2E_TOUCHFILES`, `GLOBAL_TOUCHFILES`, names also from `E2E_TIERS`);
 *   only `test/skill-e2e-*.test.ts` files may be skipped by diff;
 * - one preflight per run: `preflightAnthropicApi(env)` of its
 *   test/helpers/anthropic-preflight.ts, when that module exists, in the
 *   parent; children then get `EVALS_PREFLIGHT_OK=1` and skip their own;
 * - `empty-files = "fail"`: a paid file that registers no tests is a fault
 *   (a guard or a typo that turned it off), never an empty pass.
 */

/** Built-in presets by name, in their raw (bunfig.toml) form. */
export const BUILTIN_PRESETS: Readonly<Record<string, Record<string, unknown>>> = {
  "gstack-paid": {
    description: "gstack's paid eval tier (gate / periodic): one bun test process per paid file",
    globs: [
      "test/skill-llm-eval.test.ts",
      "test/skill-e2e-*.test.ts",
      "test/skill-routing-e2e.test.ts",
      "test/codex-e2e.test.ts",
      "test/codex-e2e-sol-scope.test.ts",
      "test/gemini-e2e.test.ts",
    ],
    "files-per-shard": 1,
    jobs: 4,
    timeout: 1800,
    grace: 5,
    "empty-files": "fail",
    "max-concurrency": 4,
    "shard-flags": ["--retry=1", "--concurrent", "--max-concurrency={max-concurrency}", "--timeout={timeout-ms}"],
    env: { EVALS: "1" },
    knobs: { jobs: "EVALS_JOBS", "max-concurrency": "EVALS_CONCURRENCY", "timeout-ms": "EVALS_SHARD_TIMEOUT_MS" },
    tier: {
      env: "EVALS_TIER",
      values: ["gate", "periodic"],
      default: "gate",
      guards: [
        "EVALS_TIER\\s*===\\s*['\"`]{tier}['\"`]",
        "\\b(?:describeE2ETier|e2eTierEnabled)\\(\\s*['\"`]{tier}['\"`]",
      ],
    },
    "shard-dir": {
      env: "GSTACK_EVAL_DIR",
      module: "test/helpers/eval-store.ts",
      export: "getProjectEvalDir",
      base: "{out}/evals",
      slug: "file-stem",
    },
    selection: {
      touchfiles: "test/helpers/touchfiles.ts",
      "touchfiles-export": "E2E_TOUCHFILES",
      "global-export": "GLOBAL_TOUCHFILES",
      "names-exports": ["E2E_TIERS"],
      skippable: "^test/skill-e2e-[^/]*\\.test\\.ts$",
      "all-env": "EVALS_ALL",
      "base-env": "EVALS_BASE",
      "selection-env": "EVALS_SELECTION_JSON",
    },
    preflight: {
      module: "test/helpers/anthropic-preflight.ts",
      export: "preflightAnthropicApi",
      "ok-env": "EVALS_PREFLIGHT_OK",
    },
    script: "test:gate",
    "run-id-env": "EVALS_RUN_ID",
    dispatch: { repo: "garrytan/gstack", workflow: "shardguard-bg.yml", inputs: { tier: "{tier}" } },
  },
};
