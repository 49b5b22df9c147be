/**
 * What the entry test file written by `shardguard init --preset NAME`
 * imports: a cheap check, run by plain `bun test`, that the preset resolves
 * and its globs match at least one file.
 */
export { checkPresetEntry, type EntryCheck } from "../runner/presets/entry-check.ts";
