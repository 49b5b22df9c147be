/** What each supported Bun can do (docs/bun-behaviour.md, "Per Bun version"): nothing else compares versions. */

/**
 * Oldest Bun shardguard supports: the first 1.3 release, run through the differential table (docs/bun-behaviour.md,
 * "Older than 1.3.13"); before it, the inspector's test events were not measured.
 */
export const OLDEST_SUPPORTED_BUN = "1.3.0";

/** Newest Bun whose behaviour was measured. */
export const NEWEST_MEASURED_BUN = "1.4.5";

/** The facts of one Bun version that change what shardguard passes, reads or reports. */
export interface BunCapabilities {
  /** The version read, e.g. "1.3.13". */
  version: string;
  /** Bun's JUnit lists every attempt of a retried test as its own testcase, the last final (1.3.x). */
  junitListsAttempts: boolean;
  /** Bun's JUnit `<failure>` has a message and the error text (1.4.0 on); before, only a type. */
  junitFailureText: boolean;
  /** `bun --no-orphans` exists (1.3.14 on): a shard child exits when the runner dies. */
  noOrphans: boolean;
  /** The version is past {@link NEWEST_MEASURED_BUN}: taken to behave as that one. */
  newerThanMeasured: boolean;
  /** `--isolate` works with the event channel: 1.3.14 ends such children without the end mark. */
  isolateWithEvents: boolean;
  /** `bun test --isolate` exists (1.3.13 on); before, it is ignored and files share one global object. */
  isolateFlag: boolean;
  /** `bun test --retry N` exists (1.3.10 on); before, it is ignored and nothing is retried. */
  retryFlag: boolean;
  /** Bun writes its JUnit when `--bail` stops the run (1.3.10 on); before, it writes none. */
  junitUnderBail: boolean;
}

/** Order of two versions, negative when a < b; a pre-release or build suffix is ignored (canaries behave as base). */
function order(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .split(/[-+]/)[0]!
      .split(".")
      .map((n) => Number.parseInt(n, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** What Bun `version` ("1.3.13", as `bun --version` prints it) can do. */
export function bunCapabilities(version: string): BunCapabilities {
  return {
    version,
    junitListsAttempts: order(version, "1.4.0") < 0,
    junitFailureText: order(version, "1.4.0") >= 0,
    noOrphans: order(version, "1.3.14") >= 0,
    newerThanMeasured: order(version, NEWEST_MEASURED_BUN) > 0,
    isolateWithEvents: order(version, "1.3.14") !== 0,
    isolateFlag: order(version, "1.3.13") >= 0,
    retryFlag: order(version, "1.3.10") >= 0,
    junitUnderBail: order(version, "1.3.10") >= 0,
  };
}

/** The capabilities of the first measured Bun, for callers that read no version (tests, embedders). */
export const PINNED_CAPABILITIES: BunCapabilities = bunCapabilities("1.4.4");

/** Why Bun `version` is refused, or null when it is in the supported range ({@link OLDEST_SUPPORTED_BUN} on). */
export function unsupportedBun(version: string): string | null {
  if (!/^\d+\.\d+\.\d+/.test(version)) return `Bun ${version} is not a version shardguard can read`;
  if (order(version, OLDEST_SUPPORTED_BUN) < 0)
    return `Bun ${version} is older than ${OLDEST_SUPPORTED_BUN}, the oldest supported`;
  return null;
}

/** What this Bun lacks that the run would use, one sentence each; `events`: the run has inspector events. */
export function missingFeatures(caps: BunCapabilities, events: boolean): string[] {
  const out: string[] = [];
  const v = `Bun ${caps.version}`;
  if (!caps.noOrphans) {
    out.push(
      `${v} has no --no-orphans: a shard child does not exit by itself if the runner is killed with SIGKILL; the ` +
        `run's guardian ends it instead`,
    );
  }
  if (!caps.junitFailureText) {
    out.push(
      events
        ? `${v}'s JUnit has no failure messages: they are taken from the inspector events`
        : `${v}'s JUnit has no failure messages and test events are off: failures are reported without one`,
    );
  }
  if (caps.newerThanMeasured)
    out.push(`${v} is newer than ${NEWEST_MEASURED_BUN}, the newest measured: it is read as ${NEWEST_MEASURED_BUN} is`);
  return out;
}

/**
 * The `bun test` flags in `bunArgs` this Bun lacks, each with what it would do instead (Bun ignores unknown flags
 * silently, so a run would look right and be wrong); empty when it has them all.
 */
export function lackedFlags(caps: BunCapabilities, bunArgs: readonly string[]): string[] {
  const has = (flag: string) => bunArgs.some((a) => a === flag || a.startsWith(`${flag}=`));
  const out: string[] = [];
  if (has("--retry") && !caps.retryFlag) out.push("--retry (it would retry nothing)");
  if (has("--bail") && !caps.junitUnderBail) out.push("--bail (its JUnit would be lost when it stops the run)");
  if (has("--isolate") && !caps.isolateFlag) out.push("--isolate (files would share one global object)");
  return out;
}
