/**
 * The dispatch follower: dispatch the workflow (or adopt a duplicate), find its run by the nonce in its run-name
 * (`[shardguard NONCE]`, never by timing or order), follow it and map its conclusion to an exit code.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { ghDispatchRuns, ghRunView, ghWorkflowRun, type CiRun, type GhRunner } from "../../exec/gh.ts";
import { BG_EXIT, stateForCode, type BgEnding } from "./record.ts";

/** The dedupe key of a lane, revision and base: the nonce without its random tail. */
export function dedupeKey(lane: string, sha: string, baseSha: string | null): string {
  return `${lane}-${sha.slice(0, 12)}-${(baseSha ?? "none").slice(0, 12)}-`;
}

/** A fresh nonce for `key`. */
export function makeNonce(key: string): string {
  return `${key}${randomBytes(4).toString("hex")}`;
}

/** The run-name marker the workflow carries: `[shardguard NONCE]`. */
export const nonceMarker = (nonce: string) => `[shardguard ${nonce}]`;

/** The CI conclusion as an exit code: success 0, failure 1, cancelled 130, anything else 2. */
export function conclusionCode(conclusion: string | null | undefined): number {
  if (conclusion === "success") return BG_EXIT.passed;
  if (conclusion === "failure") return BG_EXIT.failed;
  if (conclusion === "cancelled") return BG_EXIT.cancelled;
  return BG_EXIT.other;
}

/** A same-key dispatch queued, running or succeeded: following it answers the same; failed ones are never reused. */
export function findDuplicate(runs: readonly CiRun[], key: string): CiRun | null {
  return (
    runs.find(
      (r) =>
        r.event === "workflow_dispatch" &&
        r.displayTitle.includes(`[shardguard ${key}`) &&
        (r.status !== "completed" || r.conclusion === "success"),
    ) ?? null
  );
}

/** The dispatch run whose run-name carries exactly `nonce`. */
export function runForNonce(runs: readonly CiRun[], nonce: string): CiRun | null {
  return runs.find((r) => r.event === "workflow_dispatch" && r.displayTitle.includes(nonceMarker(nonce))) ?? null;
}

/** What the follower dispatches. */
export interface DispatchSpec {
  repo: string;
  workflow: string;
  /** The branch dispatched (its head is the tested sha). */
  ref: string;
  sha: string;
  key: string;
  nonce: string;
  /** Inputs besides expected_sha and nonce (the preset's). */
  inputs: Record<string, string>;
}

/** Options of {@link followDispatch}. */
export interface FollowOptions {
  gh: GhRunner;
  /** Writes one line to the log. */
  line: (text: string) => void;
  /** Time between polls, ms. */
  pollMs: number;
  /** Polls of `gh run list` before a dispatched run that never appears is given up (exit 2). */
  findPolls?: number;
  /** Called once the followed run is known (the record is updated with it). */
  onRun?: (run: CiRun) => Promise<void> | void;
  /** Called once with how the follow ended (the record's ending): its state word and one line saying why. */
  onEnding?: (state: BgEnding["state"], why: string) => void;
  signal?: AbortSignal;
}

/** The state word for a CI conclusion: as its code, except that `timed_out` is timed-out. */
export function conclusionState(conclusion: string | null | undefined): BgEnding["state"] {
  return conclusion === "timed_out" ? "timed-out" : stateForCode(conclusionCode(conclusion));
}

/**
 * Dispatches (or adopts a duplicate) and follows to the conclusion.
 * @returns the mapped exit code; 2 when gh refused the dispatch or the run never appeared
 * @throws the abort reason when `signal` aborts (cap reached, cancelled)
 */
export async function followDispatch(spec: DispatchSpec, o: FollowOptions): Promise<number> {
  const wait = () => delay(o.pollMs, undefined, o.signal ? { signal: o.signal } : {});
  let target = findDuplicate(ghDispatchRuns(o.gh, spec.repo, spec.workflow) ?? [], spec.key);
  if (target) {
    o.line(
      `shardguard bg: following existing run ${target.databaseId} ${target.url} (same lane, revision and base; not ` +
        `dispatching again)`,
    );
  } else {
    const inputs = { ...spec.inputs, expected_sha: spec.sha, nonce: spec.nonce };
    const refused = ghWorkflowRun(o.gh, { repo: spec.repo, workflow: spec.workflow, ref: spec.ref, inputs });
    if (refused !== null) {
      o.line(`shardguard bg: gh workflow run ${spec.workflow} failed: ${refused}`);
      o.onEnding?.("error", `gh workflow run ${spec.workflow} failed`);
      return BG_EXIT.other;
    }
    o.line(`shardguard bg: dispatched ${spec.workflow} on ${spec.repo}@${spec.ref} with nonce ${spec.nonce}`);
    for (let poll = 0; poll < (o.findPolls ?? 40) && !target; poll++) {
      await wait();
      target = runForNonce(ghDispatchRuns(o.gh, spec.repo, spec.workflow) ?? [], spec.nonce);
    }
    if (!target) {
      o.line(
        `shardguard bg: no run named ${nonceMarker(spec.nonce)} appeared; does ${spec.workflow} set run-name with ` +
          `the nonce (examples/github/)?`,
      );
      o.onEnding?.("error", `the dispatched run never appeared`);
      return BG_EXIT.other;
    }
  }
  o.line(`shardguard bg: CI run ${target.databaseId} ${target.url}`);
  await o.onRun?.(target);
  let last = "";
  for (;;) {
    const view = ghRunView(o.gh, spec.repo, target.databaseId);
    if (view && view.status !== last) {
      last = view.status;
      o.line(`shardguard bg: CI run ${target.databaseId}: ${last}`);
    }
    if (view?.status === "completed") {
      const code = conclusionCode(view.conclusion);
      o.line(`shardguard bg: CI run ${target.databaseId} concluded ${view.conclusion ?? "(none)"}: exit ${code}`);
      o.onEnding?.(
        conclusionState(view.conclusion),
        `CI run ${target.databaseId} concluded ${view.conclusion ?? "(none)"}`,
      );
      return code;
    }
    await wait();
  }
}
