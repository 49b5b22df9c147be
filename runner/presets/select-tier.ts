/**
 * Tiers: which tier a run is for, and which files have anything to run in it. Tests still filter by tier at run
 * time, so a file is left out only on explicit evidence; anything unclear, an unreadable source too, is kept.
 */

import { readRegularTextSync } from "../util/regular-file.ts";
import path from "node:path";
import { ConfigError } from "../config/settings-schema.ts";
import { guardRegex, type TierSpec } from "./preset-schema.ts";

/** Whether a file is in the tier, and why (shown by `list`). */
export interface TierDecision {
  included: boolean;
  reason: string;
}

/** The tier chosen for a run and where the choice came from. */
export interface ChosenTier {
  name: string;
  /** "--tier", the environment variable's name, or "default". */
  from: string;
}

/**
 * Picks the tier: `--tier` > the tier variable (empty counts as unset) > the preset's default.
 *
 * @param useDefault false for `bun test FILE...`, which keeps its tierless meaning: a default would narrow it into
 *   a run that can pass where plain `bun test` fails
 * @returns null when no tier is named and no default applies
 * @throws ConfigError when the value is not one of the preset's tiers (a typo would self-skip every test and pass)
 */
export function chooseTier(
  spec: TierSpec,
  flag: string | undefined,
  env: Record<string, string | undefined>,
  useDefault = true,
): ChosenTier | null {
  const fromEnv = env[spec.env];
  const [raw, from] =
    flag !== undefined
      ? [flag, "--tier"]
      : fromEnv !== undefined && fromEnv !== ""
        ? [fromEnv, spec.env]
        : [spec.default, "default"];
  if (from === "default" && !useDefault) return null;
  if (!spec.values.includes(raw)) {
    throw new ConfigError(
      `invalid ${from} ${JSON.stringify(raw)}: expected one of ${spec.values.join(", ")} (an unknown tier would skip ` +
        `every test and still pass)`,
    );
  }
  return { name: raw, from };
}

/** Classifies one file for `tier` (the reference runner's rule): declares it → in; only others → out; else in. */
export function classifyTier(source: string, tier: string, spec: TierSpec): TierDecision {
  const declares = (t: string) => spec.guards.some((g) => guardRegex(g, t).test(source));
  if (declares(tier)) return { included: true, reason: `declares tier ${tier}` };
  const others = spec.values.filter((t) => t !== tier && declares(t));
  if (others.length > 0) return { included: false, reason: `declares tier ${others.join(", ")} only` };
  return { included: true, reason: "no whole-file tier guard: its tests decide at run time" };
}

/** Splits files (relative to `root`) into in the tier and left out, with reasons; an unreadable file is kept. */
export function filterByTier(
  root: string,
  files: readonly string[],
  tier: string,
  spec: TierSpec,
): { selected: string[]; reasons: Map<string, string>; excluded: { file: string; reason: string }[] } {
  const selected: string[] = [];
  const reasons = new Map<string, string>();
  const excluded: { file: string; reason: string }[] = [];
  for (const file of files) {
    let decision: TierDecision;
    try {
      decision = classifyTier(readRegularTextSync(path.join(root, file)), tier, spec);
    } catch {
      decision = { included: true, reason: "source unreadable: kept" };
    }
    if (decision.included) {
      selected.push(file);
      reasons.set(file, decision.reason);
    } else {
      excluded.push({ file, reason: `tier ${tier}: ${decision.reason}` });
    }
  }
  return { selected, reasons, excluded };
}
