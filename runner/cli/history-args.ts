/** argv of `shardguard history [QUESTION] [FILTERS]`, `history import DIR...` and `history prune --keep N`. */
import path from "node:path";
import { readArgv } from "../config/args.ts";
import { ConfigError } from "../config/settings-schema.ts";
import type { HistoryQuestion, HistoryCommandInputs } from "../commands/history-command.ts";
import type { Host } from "../engine/host.ts";

const QUESTIONS = ["--flaky", "--failing", "--slow", "--cost", "--runs"] as const;
const VALUED = ["--test", "--branch", "--last", "--since", "--history", "--root", "--out", "--keep"];
const BOOLEANS = [...QUESTIONS, "--json", "--help"];
const ACCEPTED =
  "--flaky, --failing, --slow, --cost, --runs, --test NAME, --json, --branch NAME, --last N, --since DATE, " +
  "--history URL, --root DIR, --out DIR (import DIR...; prune --keep N)";

/** A whole number from 1 to 1,000,000 of `flag`. */
function count(flag: string, raw: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= 1_000_000))
    throw new ConfigError(`invalid ${flag} ${JSON.stringify(raw)}: expected a whole number from 1 to 1000000`);
  return n;
}

/** A `--since` date: ISO-8601, e.g. 2026-12-01 or 2026-12-01T10:00:00Z, as an ISO time. */
function since(raw: string): string {
  const t = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(t))
    throw new ConfigError(`invalid --since ${JSON.stringify(raw)}: expected an ISO date such as 2026-12-01`);
  return new Date(t).toISOString();
}

/**
 * Parses history's argv.
 * @returns null when --help was asked
 * @throws ConfigError for an unknown or repeated flag, a bad value or two questions at once
 */
export function parseHistoryArgs(argv: readonly string[], host: Pick<Host, "cwd">): HistoryCommandInputs | null {
  const [first, ...after] = argv;
  const action = first === "import" || first === "prune" ? first : "query";
  const positional: string[] = [];
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (const token of readArgv(action === "query" ? argv : after, VALUED, BOOLEANS)) {
    if (token.kind === "end" || (token.kind === "flag" && !token.known))
      throw new ConfigError(
        `unknown history option ${token.kind === "end" ? "--" : token.flag}; accepted: ${ACCEPTED}`,
      );
    if (token.kind === "positional") positional.push(token.value);
    else if (token.flag === "--help") return null;
    else if (VALUED.includes(token.flag)) {
      if (token.value === undefined || token.value === "") throw new ConfigError(`flag ${token.flag} needs a value`);
      if (values.has(token.flag)) throw new ConfigError(`flag ${token.flag} was given twice`);
      values.set(token.flag, token.value);
    } else flags.add(token.flag);
  }
  if (action !== "import" && positional.length > 0)
    throw new ConfigError(`unexpected argument ${JSON.stringify(positional[0])}; accepted: ${ACCEPTED}`);
  if (action === "import" && positional.length === 0)
    throw new ConfigError("shardguard history import needs at least one DIR or report.json");
  if (action === "prune" && !values.has("--keep")) throw new ConfigError("shardguard history prune needs --keep N");
  const asked = QUESTIONS.filter((q) => flags.has(q));
  if (values.has("--test")) asked.push("--test" as never);
  if (asked.length > 1) throw new ConfigError(`history answers one question at a time; got ${asked.join(" and ")}`);
  const question = (asked[0]?.slice(2) ?? "runs") as HistoryQuestion;
  const root = values.has("--root") ? path.resolve(host.cwd, values.get("--root")!) : null;
  return {
    action,
    question,
    testName: values.get("--test") ?? null,
    json: flags.has("--json"),
    filter: {
      branch: values.get("--branch") ?? null,
      last: values.has("--last") ? count("--last", values.get("--last")!) : 20,
      since: values.has("--since") ? since(values.get("--since")!) : null,
    },
    keep: values.has("--keep") ? count("--keep", values.get("--keep")!) : null,
    sources: positional.map((p) => path.resolve(host.cwd, p)),
    history: values.get("--history") ?? null,
    root,
    out: values.has("--out") ? path.resolve(host.cwd, values.get("--out")!) : null,
  };
}
