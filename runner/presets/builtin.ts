/**
 * Built-in presets as raw data, in the shape of a `[shardguard.presets.NAME]` table of bunfig.toml.
 * `gstack-paid` reproduces gstack's paid-tier runner (MIT): docs/presets.md, "The built-in preset `gstack-paid`".
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
    "cost-adapter": "gstack-eval",
    // gstack's own per-run caps (its test/skill-budget-regression.test.ts), here a budget that acts during the run.
    "budget-env": {
      gate: "EVALS_BUDGET_HARD_CAP_GATE",
      periodic: "EVALS_BUDGET_HARD_CAP_PERIODIC",
      "*": "EVALS_BUDGET_HARD_CAP",
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
