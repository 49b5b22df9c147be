/** `shardguard init`: plans and applies presets/init.ts's edits. */
import { applyInit, planInit } from "../presets/init.ts";
import { EXIT } from "../results/codes.ts";
import type { Host } from "../engine/host.ts";

/** What `init` was asked to do. */
export interface InitRequest {
  /** Absolute project root. */
  root: string;
  /** Preset whose entry file and script to add; null for the preload alone. */
  preset: string | null;
  /** Print the changes, write nothing. */
  dryRun: boolean;
}

/**
 * Plans and applies the edits, one line per file; returns 0.
 * @throws ConfigError for an unknown preset or files it cannot edit safely
 */
export function initCommand(req: InitRequest, host: Host): number {
  const { root, preset, dryRun } = req;
  const { changes, ref } = planInit(root, preset);
  for (const line of applyInit(root, changes, dryRun)) host.stdout(line);
  if (!ref.installed) {
    host.stdout(
      `shardguard init: note: ${root}/node_modules has no shardguard, so bunfig.toml points at ${ref.preload} (this ` +
        `copy of shardguard); after \`bun add -d shardguard\`, change it to "shardguard/preset/preload.ts"`,
    );
  }
  const changed = changes.some((c) => c.action === "create" || c.action === "update");
  host.stdout(
    dryRun
      ? `shardguard init: dry run, nothing written${changed ? "" : " (nothing to change)"}`
      : changed
        ? `shardguard init: done${preset !== null ? `; run: bun test --preset ${preset}` : ""}`
        : "shardguard init: already set up, nothing changed",
  );
  return EXIT.ok;
}
