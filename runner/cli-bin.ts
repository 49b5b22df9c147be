#!/usr/bin/env bun
/** The `shardguard` command (package.json `bin`): the compiled CLI when fresh, else the sources (cli/compiled.ts). */
import { createRequire } from "node:module";
import { freshCompiledCli } from "./cli/compiled.ts";
import { PACKAGE_ROOT } from "./util/package-root.ts";

const compiled = freshCompiledCli(PACKAGE_ROOT);
if (compiled !== null) createRequire(import.meta.url)(compiled);
else await import("./cli-entry.ts");
