/** The configuration layer's error and how it shows a bad value; shared by every parser of settings. */

/** A raw value for an error line: JSON, but numbers JSON cannot write (`inf`, `nan`, `1e400`) spelled as TOML does. */
export function showValue(raw: unknown): string {
  if (typeof raw === "number" && !Number.isFinite(raw)) return Number.isNaN(raw) ? "nan" : raw > 0 ? "inf" : "-inf";
  return JSON.stringify(raw) ?? String(raw);
}

/** A usage or configuration error: one line, exit 2 before any child starts (docs/reports.md). */
export class ConfigError extends Error {
  override name = "ConfigError";
}
