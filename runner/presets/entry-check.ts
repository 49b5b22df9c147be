/**
 * The check behind the entry test file of a preset (see init.ts): plain
 * `bun test` runs it as an ordinary, cheap test.
 */
import { ConfigError } from "../config/settings-schema.ts";
import { readCommandLine } from "./intercept-decision.ts";
import { getPreset, loadPresets, presetFiles } from "./resolve.ts";

/** Result of {@link checkPresetEntry}. */
export interface EntryCheck {
  preset: string;
  /** The preset's files under the root, root-relative, sorted. */
  files: string[];
}

/**
 * Resolves preset `name` in `root` (built-in or bunfig.toml) and lists its files.
 *
 * Also fails when this test runs inside `bun test --preset NAME`: the preload
 * would have taken such a run over before any test file loaded, so reaching
 * this test means it did not (bun test started where Bun does not read the
 * bunfig.toml holding the preload, e.g. a subdirectory). Passing here would
 * turn a paid run that ran nothing into a green one.
 *
 * @throws ConfigError when the preset is unknown or invalid, no file matches
 *   its globs, or the preset was requested but the preload did not take over
 */
export function checkPresetEntry(
  name: string,
  root: string,
  argv: readonly string[] | null = readCommandLine(process.pid),
): EntryCheck {
  if (argv?.some((a) => a === "--preset" || a.startsWith("--preset="))) {
    throw new ConfigError(
      `bun test --preset ran without shardguard's preload, so no paid test ran: run it from ${root} (where bunfig.toml registers the preload)`,
    );
  }
  const preset = getPreset(loadPresets(root), name, "preset");
  const files = presetFiles(preset, root);
  if (files.length === 0) {
    throw new ConfigError(`preset ${name}: no file under ${root} matches its globs (${preset.globs.join(", ")})`);
  }
  return { preset: name, files };
}
