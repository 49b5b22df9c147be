/**
 * `shardguard bg`: start a run (or a CI dispatch and its follower) in the background and return at once. Every
 * refusal happens here, before anything starts (exit 2); the detached worker (worker.ts) does the rest.
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ParsedWithExtras } from "../../config/args.ts";
import { ConfigError } from "../../config/settings-schema.ts";
import { startDetached } from "../../exec/detach.ts";
import { ghRunner } from "../../exec/gh.ts";
import { EXIT } from "../../results/codes.ts";
import { BG_RUN_ID_ENV } from "../../engine/host.ts";
import type { Host } from "../../engine/host.ts";
import { lockHolderNow, lockWaitMessage, validateLockName } from "../../engine/lock.ts";
import { readTimings } from "../../plan/timings.ts";
import { computeCap, MAX_CAP_SECONDS, type BgRunCap } from "./cap.ts";
import { type CheckoutFacts, dispatchBlockers, gatherFacts, testedRevision } from "./checkout.ts";
import { dedupeKey, makeNonce, type DispatchSpec } from "./dispatch.ts";
import { type BgPlan, defaultLane, mergeBase, planBackgroundRun } from "./prepare.ts";
import { BG_EXIT, bgDir, newBgId, sentinelLine, writeRecord, type BgRecord } from "./record.ts";
import type { WorkerSpec } from "./worker.ts";
import { PACKAGE_ROOT } from "../../util/package-root.ts";

/** `shardguard bg` options (cli/bg-args.ts parses them). */
export interface BgOptions {
  /** The flags for `shardguard run`, as given. */
  runArgv: string[];
  /** The same, parsed (for planning and validation). */
  runArgs: ParsedWithExtras;
  label: string | null;
  lock: string | null;
  /** --cap, seconds. */
  capSeconds: number | null;
  mode: "auto" | "local" | "dispatch";
  workflow: string | null;
  repo: string | null;
  ref: string | null;
  follow: boolean;
  noWait: boolean;
}

/** Default workflow file dispatched (examples/github/shardguard-bg.yml). */
export const DEFAULT_WORKFLOW = "shardguard-bg.yml";
/** How long a dispatch follower may follow (and hold its lane), seconds. */
export const FOLLOW_CAP_SECONDS = MAX_CAP_SECONDS;
const NAME = /^[A-Za-z0-9._-]{1,60}$/;

/** The `shardguard` entry the worker is started with (from the sources: a detached run needs no fast start). */
const ENTRY = path.join(PACKAGE_ROOT, "runner", "cli-entry.ts");

/**
 * Starts the background run and prints its id and log.
 * @param follow with `--follow`: follows the log to its end and returns the run's code
 * @returns 0 once started (or the followed run's code)
 * @throws ConfigError (exit 2, nothing started) for every refusal
 */
export async function bgCommand(o: BgOptions, host: Host, follow: (log: string) => Promise<number>): Promise<number> {
  // 1. Refuse bad flags and plan the run as `run` would.
  if (o.label !== null && !NAME.test(o.label))
    throw new ConfigError(`invalid --label ${JSON.stringify(o.label)}: use 1-60 letters, digits, ".", "_" or "-"`);
  const plan = await planBackgroundRun(o.runArgs, host);
  const { settings, preset } = plan;
  const lock = laneOf(o, plan);
  // 2. Choose the backend (refusing a --dispatch the checkout cannot send).
  const { facts, backend } = chooseBackend(o, plan, host);
  // 3. Refuse to queue behind a busy lane with --no-wait.
  const holder = await lockHolderNow(lock);
  if (holder && o.noWait)
    throw new ConfigError(`lane busy: ${lockWaitMessage(lock, holder)}; --no-wait refuses to queue behind it`);
  // 4. The cap.
  const cap = backend === "dispatch" ? followCap(o.capSeconds) : localCap(o.capSeconds, plan);
  // 5. The run's id, its log and the run-id variables the tests see.
  const id = newBgId(labelOf(o, plan));
  mkdirSync(bgDir(settings.out), { recursive: true, mode: 0o700 });
  const log = path.join(bgDir(settings.out), `${id}.log`);
  const runIdVars = ["SHARDGUARD_RUN_ID", ...(preset?.runIdEnv ? [preset.runIdEnv] : [])];
  const env: Record<string, string | undefined> = { ...host.env };
  for (const name of runIdVars) if (!env[name]) env[name] = id;
  env[BG_RUN_ID_ENV] = id;
  // 6. The log's first lines and the record.
  const dispatch = backend === "dispatch" ? dispatchSpecOf(o, plan, lock, facts) : null;
  const lines = [
    headerLine({ plan, lock, facts, dispatch, cap }),
    `shardguard bg: ${runIdVars.map((n) => `${n}=${env[n]}`).join(" ")}`,
  ];
  if (cap.exceeds) {
    lines.push(
      `shardguard bg: WARNING the plan (${Math.round(cap.serialMs / 1000)}s of files at ${settings.jobs} jobs) may ` +
        `not fit the ${cap.seconds}s cap; what is not done by then is cancelled`,
    );
  }
  writeFileSync(log, `${lines.join("\n")}\n`, { mode: 0o600 });
  await writeRecord(newRecord({ id, backend, log, plan, lock, dispatch }));
  // 7. Start the detached worker.
  startWorker({
    spec: {
      record: log,
      backend,
      lock,
      noWait: o.noWait,
      capSeconds: cap.seconds,
      graceMs: settings.graceMs,
      runArgv: o.runArgv,
      dispatch,
    },
    env,
    host,
  });
  // 8. Tell where it is (the run-id line stays in the log), and follow it when asked.
  for (const line of lines.slice(0, 1).concat(lines.slice(2))) host.stdout(line);
  if (holder) host.stdout(`shardguard bg: ${lockWaitMessage(lock, holder)}; the run starts when it is released`);
  host.stdout(`shardguard bg: started ${id}`);
  host.stdout(`shardguard bg: log ${log}`);
  host.stdout(`shardguard bg: shardguard status ${id}${o.follow ? "" : " [--follow]"} reports on it`);
  return o.follow ? await follow(log) : EXIT.ok;
}

/** The lane: --lock, else one per root and preset (docs/background.md, lanes; names: configuration.md). */
function laneOf(o: BgOptions, plan: BgPlan): string {
  const lock = o.lock ?? defaultLane(plan.settings.root, plan.preset?.name ?? null);
  try {
    validateLockName(lock);
  } catch (error) {
    throw new ConfigError(`--lock: ${(error as Error).message}`);
  }
  return lock;
}

/**
 * Dispatch when every condition holds, else local, printing each one that does not (docs/background.md,
 * dispatch); --local asks nothing of gh, --dispatch refuses with every reason.
 */
function chooseBackend(o: BgOptions, plan: BgPlan, host: Host): { facts: CheckoutFacts; backend: BgRecord["backend"] } {
  const { settings, preset } = plan;
  const repo = o.repo ?? preset?.dispatch?.repo ?? null;
  const gh = o.mode === "local" ? null : ghRunner(settings.root, host.env);
  const facts = gatherFacts(settings.root, host.env, gh, repo, settings.out);
  const blockers = o.mode === "local" ? [] : dispatchBlockers(facts);
  if (o.mode === "dispatch" && blockers.length > 0) {
    throw new ConfigError(`cannot dispatch: ${blockers.join("; ")} (or run it here with --local)`);
  }
  const backend = o.mode !== "local" && blockers.length === 0 ? "dispatch" : "local";
  // Why it is not on CI is news only to who asked for CI (--repo, --workflow, a preset's dispatch).
  const asked = o.repo !== null || o.workflow !== null || Boolean(preset?.dispatch);
  if (o.mode === "auto" && backend === "local" && asked)
    for (const why of blockers) host.stdout(`shardguard bg: running locally, not on CI: ${why}`);
  return { facts, backend };
}

/** A follower's cap: --cap, else {@link FOLLOW_CAP_SECONDS} (docs/background.md, the cap). */
function followCap(capSeconds: number | null): BgRunCap {
  return {
    seconds: capSeconds ?? FOLLOW_CAP_SECONDS,
    serialMs: 0,
    exceeds: false,
    recorded: 0,
    source: capSeconds ? "--cap" : "plan",
  };
}

/**
 * A local run's cap: computed from the plan and its timings (cap.ts), or --cap; `exceeds` when the plan may
 * not fit it (docs/background.md, the cap).
 */
function localCap(capSeconds: number | null, plan: BgPlan): BgRunCap {
  const { settings } = plan;
  // The run's own timings files (--timings, SHARDGUARD_TIMINGS, bunfig.toml); missing ones are a first run.
  const timings = readTimings(settings.timings).durations;
  const computed = computeCap(plan.files, settings.jobs, timings);
  return capSeconds !== null
    ? {
        ...computed,
        seconds: capSeconds,
        source: "--cap",
        exceeds: computed.serialMs / settings.jobs / 1000 > capSeconds,
      }
    : computed;
}

/** The run id's label: --label, else the preset and tier, else `run` (docs/background.md, command line). */
function labelOf(o: BgOptions, plan: BgPlan): string {
  const { preset } = plan;
  return (
    o.label ??
    (preset ? `${preset.name}${plan.tier ? `-${plan.tier}` : ""}`.replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 60) : "run")
  );
}

/** What the follower dispatches: repository, workflow, branch, dedupe key and inputs (docs/background.md, dispatch). */
function dispatchSpecOf(o: BgOptions, plan: BgPlan, lock: string, facts: CheckoutFacts): DispatchSpec {
  const { settings, preset } = plan;
  const baseSha = plan.baseRef ? mergeBase(settings.root, plan.baseRef) : null;
  // The tier is part of what is tested: a gate run must never stand in for a periodic one.
  const key = dedupeKey(plan.tier ? `${lock}.${plan.tier}` : lock, facts.sha!, baseSha);
  const inputs = Object.fromEntries(
    Object.entries(preset?.dispatch?.inputs ?? {}).map(([k, v]) => [k, v.split("{tier}").join(plan.tier ?? "")]),
  );
  return {
    repo: facts.repo!,
    workflow: o.workflow ?? preset?.dispatch?.workflow ?? DEFAULT_WORKFLOW,
    ref: o.ref ?? facts.branch!,
    sha: facts.sha!,
    key,
    nonce: makeNonce(key),
    inputs,
  };
}

/** The log's first line: backend, what is tested, cap, jobs and lane (docs/background.md, the log and the sentinel). */
function headerLine(h: {
  plan: BgPlan;
  lock: string;
  facts: CheckoutFacts;
  dispatch: DispatchSpec | null;
  cap: BgRunCap;
}): string {
  const { plan, lock, facts, dispatch, cap } = h;
  const { jobs } = plan.settings;
  const capText = `cap=${cap.seconds}s${cap.source === "--cap" ? " (--cap)" : ""}`;
  if (dispatch)
    return (
      `shardguard bg: backend=dispatch tested=${facts.sha} repo=${dispatch.repo} workflow=${dispatch.workflow} ` +
      `ref=${dispatch.ref} nonce=${dispatch.nonce} ${capText} jobs=${jobs} lane=${lock}`
    );
  return (
    `shardguard bg: backend=local tested=${testedRevision(facts)} ${capText} jobs=${jobs} ` +
    `files=${plan.files.length} lane=${lock}`
  );
}

/** The record of a run about to start: no worker pid, run id or CI run yet. */
function newRecord(r: {
  id: string;
  backend: BgRecord["backend"];
  log: string;
  plan: BgPlan;
  lock: string;
  dispatch: DispatchSpec | null;
}): BgRecord {
  const { id, backend, log, plan, lock, dispatch } = r;
  return {
    id,
    backend,
    log,
    root: plan.settings.root,
    out: plan.settings.out,
    lock,
    pid: null,
    procStart: null,
    startedAt: new Date().toISOString(),
    runId: null,
    ci: dispatch
      ? { repo: dispatch.repo, workflow: dispatch.workflow, runId: null, url: null, nonce: dispatch.nonce }
      : null,
  };
}

/** Starts the worker detached, its output into the log; when it cannot start, the log still ends with its verdict. */
function startWorker(w: { spec: WorkerSpec; env: Record<string, string | undefined>; host: Host }): void {
  const log = w.spec.record;
  try {
    startDetached({
      argv: [process.execPath, ENTRY, "__bg-worker", JSON.stringify(w.spec)],
      cwd: w.host.cwd,
      env: w.env,
      logPath: log,
    });
  } catch (error) {
    // The log must still end with its verdict: nothing ran.
    appendFileSync(
      log,
      `shardguard bg: could not start the run: ${(error as Error).message}\n${sentinelLine(BG_EXIT.other)}\n`,
    );
    throw error;
  }
}
