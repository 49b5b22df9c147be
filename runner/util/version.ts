import pkg from "../../package.json" with { type: "json" };

/** The `version` field of shardguard's package.json, e.g. "0.1.0"; recorded in every JSON report. */
export const TOOL_VERSION: string = pkg.version;
