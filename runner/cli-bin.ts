#!/usr/bin/env bun
/**
 * The `shardguard` command (package.json `bin`): the compiled CLI when it
 * was built from the sources as they are, else the sources themselves
 * (runner/cli/compiled.ts).
 * Both are `runner/cli-entry.ts`, which owns the exit code.
 */
import { createRequire } from "node:module";
import { freshCompiledCli } from "./cli/compiled.ts";
import { PACKAGE_ROOT } from "./util/package-root.ts";

const compiled = freshCompiledCli(PACKAGE_ROOT);
if (compiled !== null) createRequire(import.meta.url)(compiled);
else await import("./cli-entry.ts");
