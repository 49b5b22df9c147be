/** The check behind a preset's entry test file (init.ts); plain `bun test` runs it as a cheap test. */
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
 * Resolves preset `name` in `root` and lists its files. Fails too inside `bun test --preset NAME`: reaching this
 * test means the preload did not take over (Bun did not read its bunfig.toml), and passing would hide a run of nothing.
 *
 * @throws ConfigError for an unknown or invalid preset, no matching file, or a preset run the preload missed
 */
export function checkPresetEntry(
  name: string,
  root: string,
  argv: readonly string[] | null = readCommandLine(process.pid),
): EntryCheck {
  if (argv?.some((a) => a === "--preset" || a.startsWith("--preset="))) {
    throw new ConfigError(
      `bun test --preset ran without shardguard's preload, so no paid test ran: run it from ${root} (where ` +
        `bunfig.toml registers the preload)`,
    );
  }
  const preset = getPreset(loadPresets(root), name, "preset");
  const files = presetFiles(preset, root);
  if (files.length === 0) {
    throw new ConfigError(`preset ${name}: no file under ${root} matches its globs (${preset.globs.join(", ")})`);
  }
  return { preset: name, files };
}
