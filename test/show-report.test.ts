/**
 * `shardguard show-report [OUT]` (runner/commands/show-report.ts): prints report.html's path, opens it with the
 * platform's opener where a display allows (a stand-in `xdg-open` on PATH records what it was given), and is one
 * line and exit 2 when there is no report.html.
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { opener } from "../runner/commands/show-report.ts";
import { makeSuite, removeSuites, runCli, waitFor } from "./helpers/cli.ts";

afterAll(removeSuites);

/** A project with `.sg/report.html` and a stand-in xdg-open in `bin/` that writes its arguments to `opened`. */
function project() {
  const dir = makeSuite({ ".sg/report.html": "<!doctype html><title>r</title>\n" });
  mkdirSync(path.join(dir, "bin"));
  const fake = path.join(dir, "bin", "xdg-open");
  writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$@" > "${path.join(dir, "opened")}"\n`);
  chmodSync(fake, 0o755);
  return { dir, env: { PATH: `${path.join(dir, "bin")}:${process.env.PATH}`, DISPLAY: ":99" } };
}

test("prints the page's path and opens it with xdg-open where a display is set", async () => {
  const { dir, env } = project();
  const r = await runCli(["show-report", ".sg"], { cwd: dir, env });
  expect(r.code).toBe(0);
  const page = path.join(dir, ".sg", "report.html");
  expect(r.stdout).toBe(`${page}\n`);
  // Detached and not waited for: its whole line is there once the stand-in has run.
  const read = () => (existsSync(path.join(dir, "opened")) ? readFileSync(path.join(dir, "opened"), "utf8") : "");
  const opened = await waitFor(() => (read().endsWith("\n") ? read() : null), 10_000);
  expect(opened).toBe(`${page}\n`);
});

test("no report.html there: one line naming the path and what is accepted, exit 2", async () => {
  const { dir, env } = project();
  const r = await runCli(["show-report", "nowhere"], { cwd: dir, env });
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr.trimEnd().split("\n")).toEqual([
    `shardguard: no report.html at ${path.join(dir, "nowhere")}; accepted: a report directory (default .shardguard) ` +
      `or a report.html (run "shardguard run" first)`,
  ]);
  expect(existsSync(path.join(dir, "opened"))).toBe(false);
});

test("--help describes it; a flag is refused in one line", async () => {
  const help = await runCli(["show-report", "--help"]);
  expect(help.code).toBe(0);
  expect(help.stdout).toStartWith("shardguard show-report [OUT]\n");
  const bad = await runCli(["show-report", "--open"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr.trimEnd().split("\n")).toHaveLength(1);
});

test("the opener: open on macOS, xdg-open only with a display, none on a CI box or SSH without one", () => {
  expect(opener("darwin", {})).toBe("open");
  expect(opener("linux", { DISPLAY: ":0" })).toBe("xdg-open");
  expect(opener("linux", { WAYLAND_DISPLAY: "wayland-0" })).toBe("xdg-open");
  expect(opener("linux", {})).toBeNull();
});
