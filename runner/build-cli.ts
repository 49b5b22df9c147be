/** `npm run build` (and npm's `prepare`): builds the compiled CLI (runner/cli/compiled.ts). */
import { buildCompiledCli } from "./cli/compiled.ts";
import { PACKAGE_ROOT } from "./util/package-root.ts";

const built = await buildCompiledCli(PACKAGE_ROOT);
// On stderr: `npm pack --json` prints its JSON on stdout after `prepare` ran.
process.stderr.write(`shardguard: built ${built}\n`);
