/**
 * The check behind the entry test file of a preset (see init.ts): plain
 * `bun test` runs it as an ordinary, cheap test.
 */
import { ConfigError } from "../config/schema.ts";
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
 * @throws ConfigError when the preset is unknown or invalid, or no file matches its globs
 */
export function checkPresetEntry(name: string, root: string): EntryCheck {
  const preset = getPreset(loadPresets(root), name, "preset");
  const files = presetFiles(preset, root);
  if (files.length === 0) {
    throw new ConfigError(`preset ${name}: no file under ${root} matches its globs (${preset.globs.join(", ")})`);
  }
  return { preset: name, files };
}
