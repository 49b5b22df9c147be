/**
 * Flags Bun does not know on a taken-over `bun test` line. Bun ignores an unknown long flag and reads the value
 * after it as a path filter (`--jbos 2`: "invalid file 2"), and every shard would ignore it too: refused, naming it.
 */
import { spawnSync } from "node:child_process";
import { REFUSED_FLAGS, VALUE_FLAGS } from "./flags.ts";

/** Flags of `bun test --help` that take no value, 1.3.13 to 1.4.5: known without asking the running Bun. */
const TEST_BOOLEAN_FLAGS: ReadonlySet<string> = new Set([
  ..."--no-orphans --update-snapshots --todo --only --pass-with-no-tests --concurrent --randomize --bail".split(" "),
  ..."--only-failures --isolate --no-isolate --update-timings --help --bun --smol --inspect --inspect-wait".split(" "),
  ..."--inspect-brk --check --config --hot --watch --no-install --expose-gc".split(" "),
]);

/** Long flags the help of `bun` and `bun test` names (runtime flags apply to `bun test` too). */
export function bunHelpFlags(bun: string): Set<string> {
  const found = new Set<string>();
  for (const args of [["--help"], ["test", "--help"]]) {
    const r = spawnSync(bun, args, { encoding: "utf8", timeout: 10_000 });
    for (const m of `${r.stdout ?? ""}`.matchAll(/^\s+(?:-\w, )?(--[a-z0-9][a-z0-9.-]*)/gm)) found.add(m[1]!);
  }
  return found;
}

/** Edit distance with transpositions (`jbos` is one step from `jobs`). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest of `names` to `flag`, when close enough to be a typo of it; else null. */
export function closestFlag(flag: string, names: Iterable<string>): string | null {
  const limit = flag.length > 8 ? 2 : 1;
  let best: { name: string; d: number } | null = null;
  for (const name of names) {
    const d = distance(flag.slice(2), name.slice(2));
    if (d <= limit && (best === null || d < best.d)) best = { name, d };
  }
  return best?.name ?? null;
}

/** Names the running Bun knows without asking it. */
function knownStatically(name: string): boolean {
  return VALUE_FLAGS.has(name) || TEST_BOOLEAN_FLAGS.has(name) || name in REFUSED_FLAGS;
}

/**
 * The first long flag of `names` that Bun does not know, with the closest known flag (Bun's, or one of
 * `ownFlags`), or null when every one is Bun's. Short flags are Bun's to check: it refuses an unknown one itself.
 */
export function unknownBunFlag(
  names: readonly string[],
  ownFlags: ReadonlySet<string>,
  helpFlags: () => ReadonlySet<string> = () => bunHelpFlags(process.execPath),
): { flag: string; suggestion: string | null } | null {
  let help: ReadonlySet<string> | null = null;
  for (const name of names) {
    if (!name.startsWith("--") || knownStatically(name) || ownFlags.has(name)) continue;
    help ??= helpFlags();
    if (help.has(name)) continue;
    const known = [...VALUE_FLAGS, ...TEST_BOOLEAN_FLAGS, ...Object.keys(REFUSED_FLAGS), ...help, ...ownFlags];
    return { flag: name, suggestion: closestFlag(name, known) };
  }
  return null;
}
