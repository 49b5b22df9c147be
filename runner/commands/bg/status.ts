/**
 * `shardguard status [RUN_ID | LOG | CI_RUN_ID] [--follow]`: a background run's state, counts from its own report
 * copy (atomic, so always valid) and the test in flight per shard; --follow streams the log (docs/background.md).
 */
import { existsSync, statSync } from "node:fs";
import { readRegularTextSync, readRegularFileSync } from "../../util/regular-file.ts";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { journalPathFor, readJournal } from "../../events/journal.ts";
import { TestEventModel } from "../../events/test-model.ts";
import { runTool } from "../../exec/detach.ts";
import { ghRunView, ghRunner } from "../../exec/gh.ts";
import { ConfigError } from "../../config/settings-schema.ts";
import { EXIT, summarize, type RunReport } from "../../results/report-model.ts";
import { usdText } from "../../results/cost-apply.ts";
import { oneLine, plural } from "../../util/format.ts";
import type { Host } from "../../engine/host.ts";
import { githubRepoOf } from "./checkout.ts";
import { conclusionCode, conclusionState } from "./dispatch.ts";
import { bgDir, bgState, BG_EXIT, listRecords, readRecord, type BgRecord } from "./record.ts";
import { pollMsFrom } from "./worker.ts";

/** `status` options (cli/bg-args.ts parses them). */
export interface StatusOptions {
  target: string | null;
  follow: boolean;
  /** The run's output directory (from --out / --root, the environment, bunfig.toml). */
  out: string;
  root: string;
  repo: string | null;
}

/**
 * Prints the state; with `follow`, streams until the run ends.
 * @throws ConfigError (exit 2) for no such run
 * @returns 0 (without --follow), else the run's code (2 when it ended incomplete)
 */
export async function statusCommand(o: StatusOptions, host: Host): Promise<number> {
  const recordFile = findRecord(o);
  if (recordFile === null) return await ciStatus(o, host, null);
  const record = readRecord(recordFile);
  if (/^\d+$/.test(o.target ?? "") && record.ci) return await ciStatus(o, host, record);
  for (const l of await describeRun(record)) host.stdout(l);
  if (!o.follow) return EXIT.ok;
  return await followLog(record, host);
}

/** The record `o.target` names: a log or record path, a bg id, a CI run id of a known record; the newest when null. */
function findRecord(o: StatusOptions): string | null {
  const t = o.target;
  if (t === null) {
    const all = listRecords(o.out);
    if (all.length === 0) throw new ConfigError(`no background run under ${bgDir(o.out)} (shardguard bg starts one)`);
    return all[all.length - 1]!;
  }
  const asPath = path.resolve(t);
  if ((t.endsWith(".log") || t.endsWith(".json")) && existsSync(asPath)) return asPath;
  const byId = path.join(bgDir(o.out), `${t}.json`);
  if (existsSync(byId)) return byId;
  if (/^\d+$/.test(t)) {
    const known = listRecords(o.out).find((f) => readRecord(f).ci?.runId === Number(t));
    return known ?? null;
  }
  throw new ConfigError(
    `no background run ${JSON.stringify(t)}: give a run id from shardguard bg, its log path, or a CI run id (digits)`,
  );
}

/** The lines `status` prints for a run: state, counts, shards in flight. */
export async function describeRun(record: BgRecord, now = Date.now()): Promise<string[]> {
  const logText = readRegularTextSync(record.log);
  let { state, code, why } = bgState(record, logText, now);
  // As in followLog: a process seen gone is conclusive only for a log read after that.
  if (state === "incomplete") ({ state, code, why } = bgState(record, readRegularTextSync(record.log), now));
  const lines = [
    `${record.id}: ${state}${code !== null ? ` (exit ${code})` : ""}${why ? `: ${why}` : ""}`,
    `  backend ${record.backend}, log ${record.log}`,
  ];
  if (state === "incomplete")
    lines.push(
      "  the run's process is gone and its log has no EXIT line: it was killed (counts below are the last it wrote)",
    );
  if (record.ci)
    lines.push(
      `  CI ${record.ci.repo} ${record.ci.workflow} nonce ` +
        `${record.ci.nonce}${
          record.ci.runId ? `: run ${record.ci.runId} ${record.ci.url ?? ""}` : ": run not found yet"
        }`,
    );
  const report = record.runId ? readReportCopy(record) : null;
  if (report) lines.push(...(await progressLines(record, report, state === "running")));
  else if (record.runId)
    lines.push(
      `  its report ${path.join(record.out, "runs", record.runId, "report.json")} is gone (older runs are pruned)`,
    );
  // The total the worker recorded at the end stays when the report copy is gone.
  if (!report && record.ending?.spentUsd !== undefined) lines.push(`  spent: ${usdText(record.ending.spentUsd)}`);
  else if (record.backend === "local")
    lines.push(
      state === "running" ? "  not started yet (waiting for its lane, or preparing)" : "  no report was written",
    );
  const html = record.runId ? path.join(record.out, "runs", record.runId, "report.html") : null;
  if (report && state !== "running" && html !== null && existsSync(html)) lines.push(`  report ${html}`);
  return lines;
}

function readReportCopy(record: BgRecord): RunReport | null {
  try {
    return JSON.parse(readRegularTextSync(path.join(record.out, "runs", record.runId!, "report.json"))) as RunReport;
  } catch {
    return null;
  }
}

/** "  spent so far: $1.20 (budget $20)" from the report's `summary.cost` (ended shards'); none without costs. */
function spendLine(report: RunReport, running: boolean): string[] {
  const cost = report.summary.cost;
  if (!cost) return [];
  const budget = cost.budgetUsd === undefined ? "" : ` (budget ${usdText(cost.budgetUsd, true)})`;
  return [`  spent${running ? " so far" : ""}: ${usdText(cost.usd)}${budget}`];
}

/** Ended shards' counts and each running shard's test in flight; a dead run's open shards were in flight then. */
async function progressLines(record: BgRecord, report: RunReport, running: boolean): Promise<string[]> {
  const logDir = path.join(record.out, "runs", record.runId!, "logs");
  const ended = report.shards.filter(
    (s) => s.startedAt !== null || s.status === "skipped-by-diff" || report.finishedAt !== null,
  );
  const open = report.shards.filter((s) => !ended.includes(s));
  const sum = summarize(ended);
  const t = sum.tests;
  const lines = [
    `  shards: ${ended.length} of ${report.shards.length} ended (${sum.shards.passed} passed, ${sum.shards.failed} ` +
      `failed, ${sum.shards["timed-out"]} timed out, ${sum.shards.crashed} crashed, ${sum.shards["never-started"]} ` +
      `never started${sum.shards["skipped-by-diff"] ? `, ${sum.shards["skipped-by-diff"]} skipped by diff` : ""})`,
    // Every status counted (todo apart from skipped, as the run's summary); "so far" only while it runs.
    `  tests${running ? " so far" : ""}: ${t.passed} passed, ${t.failed} failed, ${t["timed-out"]} timed out, ` +
      `${t.crashed} crashed, ${t["never-started"]} never started, ${t.skipped} skipped, ${t.todo} ` +
      `todo${t["skipped-by-diff"] ? `, ${t["skipped-by-diff"]} skipped by diff` : ""}${
        t.flaky ? `, ${t.flaky} flaky` : ""
      }`,
  ];
  lines.push(...spendLine(report, running));
  for (const shard of open) {
    const log = path.join(logDir, `shard-${shard.index}-${shard.slug}.log`);
    if (!existsSync(log)) continue;
    const born = statSync(log).birthtimeMs;
    const since = born > 0 ? ` (${Math.round((Date.now() - born) / 1000)}s)` : "";
    if (running)
      lines.push(
        `  [${shard.index}/${report.shards.length}] running ${oneLine(shard.files.join(" "))}${since}: ` +
          `${await inFlight(log, report.root)}`,
      );
    else
      lines.push(
        `  [${shard.index}/${report.shards.length}] was running when the run died, ` +
          `${oneLine(shard.files.join(" "))}: ${await inFlight(log, report.root)}`,
      );
  }
  const queued = open.filter((s) => !existsSync(path.join(logDir, `shard-${s.index}-${s.slug}.log`))).length;
  if (queued > 0)
    lines.push(running ? `  ${plural(queued, "shard")} not started yet` : `  ${plural(queued, "shard")} never started`);
  return lines;
}

/** The test in flight per the shard's event journal (what the events said so far). */
async function inFlight(shardLog: string, root: string): Promise<string> {
  try {
    const test = TestEventModel.fromEvents(await readJournal(journalPathFor(shardLog)), { root }).running();
    return test ? `in flight: ${oneLine(test.fullName)}` : "between tests";
  } catch {
    return "no test events";
  }
}

/** Streams the log from where `describeRun` left it until the sentinel (or the process is gone). */
async function followLog(record: BgRecord, host: Host): Promise<number> {
  let offset = readRegularFileSync(record.log).length;
  const write = (text: string) => (host.write ? host.write(text) : host.stdout(text.replace(/\n$/, "")));
  // The log is read before the process is looked at: a death is conclusive only for a log read after it.
  let goneSeen = false;
  for (;;) {
    const buf = readRegularFileSync(record.log);
    if (buf.length > offset) {
      const text = buf.subarray(offset).toString("utf8");
      const cut = text.lastIndexOf("\n") + 1;
      if (cut > 0) {
        write(text.slice(0, cut));
        offset += Buffer.byteLength(text.slice(0, cut));
      }
    }
    const fresh = readRecord(record.log);
    const { state, code, why } = bgState(fresh, buf.toString("utf8"));
    if (code !== null) {
      host.stdout(`${record.id}: ${state} (exit ${code})${why ? `: ${why}` : ""}`);
      return code;
    }
    if (state === "incomplete") {
      if (!goneSeen) {
        goneSeen = true;
        continue;
      }
      host.stdout(`${record.id}: incomplete (the run's process is gone and its log has no EXIT line)`);
      return BG_EXIT.other;
    }
    await delay(Math.min(500, pollMsFrom(host.env)));
  }
}

/** `status CI_RUN_ID`: gh's view of the run; with --follow until it completes. */
async function ciStatus(o: StatusOptions, host: Host, record: BgRecord | null): Promise<number> {
  const id = o.target ?? "";
  const repo =
    o.repo ??
    record?.ci?.repo ??
    githubRepoOf(runTool("git", ["config", "--get", "remote.origin.url"], { cwd: o.root }).stdout);
  if (repo === null)
    throw new ConfigError(`status ${id}: which repository? give --repo OWNER/NAME (origin is not on github.com)`);
  const gh = ghRunner(o.root, host.env);
  let last = "";
  for (;;) {
    const view = ghRunView(gh, repo, id);
    if (view === null && !o.follow)
      throw new ConfigError(
        `gh run view ${id} --repo ${repo} failed (is gh installed and authenticated, and is ${id} a run of ${repo}?)`,
      );
    if (view && view.status !== last) {
      last = view.status;
      const done = view.status === "completed";
      const code = conclusionCode(view.conclusion);
      host.stdout(
        `CI run ${id} on ${repo}: ${
          done
            ? `${conclusionState(view.conclusion)} (${view.conclusion ?? "no conclusion"}, exit ${code})`
            : `running (${view.status})`
        } ${view.url ?? ""}`.trimEnd(),
      );
      if (done) return o.follow ? code : EXIT.ok;
    }
    if (!o.follow) return EXIT.ok;
    await delay(pollMsFrom(host.env));
  }
}
