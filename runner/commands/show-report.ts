/** `shardguard show-report [OUT]`: the path of a run's report.html, opened in a browser where one can be opened. */
import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "../config/settings-schema.ts";
import type { Host } from "../engine/host.ts";
import { EXIT } from "../results/codes.ts";

/**
 * The program that opens a file in the desktop's browser, or null where none can be opened: `open` on macOS,
 * `xdg-open` on Linux and the BSDs only with a display (`DISPLAY` or `WAYLAND_DISPLAY`); a CI box or an SSH
 * session without one gets the path alone.
 */
export function opener(platform: string, env: Record<string, string | undefined>): string | null {
  if (platform === "darwin") return "open";
  if (platform === "win32") return null;
  return env.DISPLAY || env.WAYLAND_DISPLAY ? "xdg-open" : null;
}

/**
 * Prints the path of `target`'s report.html (`target`: a report directory, default `.shardguard`, or the page
 * itself) and opens it with {@link opener}, detached, not waited for; exit 0.
 * @throws ConfigError (exit 2, one line) when there is no report.html there
 */
export function showReport(target: string | undefined, host: Host, platform = process.platform): number {
  const given = path.resolve(host.cwd, target ?? host.env.SHARDGUARD_OUT ?? ".shardguard");
  const page = existsSync(given) && statSync(given).isDirectory() ? path.join(given, "report.html") : given;
  if (!existsSync(page) || !statSync(page).isFile()) {
    throw new ConfigError(
      `no report.html at ${page}; accepted: a report directory (default .shardguard) or a report.html ` +
        `(run "shardguard run" first)`,
    );
  }
  host.stdout(page);
  const program = opener(platform, host.env);
  if (program === null) return EXIT.ok;
  // A browser outlives this command: detached, its output not ours, and a missing program only a note.
  const child = spawn(program, [page], { detached: true, stdio: "ignore", env: host.env, cwd: host.cwd });
  child.on("error", (error) => host.stderr(`shardguard: could not open it with ${program}: ${error.message}`));
  child.unref();
  return EXIT.ok;
}
