/**
 * ReportWriter (runner/engine/report-writer.ts): interim writes coalesce and are
 * spaced apart (by a gap, or a multiple of the last write's CPU time), but
 * the final write never waits out that spacing.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { INTERIM_WRITE_COST_FACTOR, INTERIM_WRITE_GAP_MS, ReportWriter } from "../runner/engine/report-writer.ts";
import { validReport, type RunReport } from "../runner/results/report-model.ts";
import { renderJson } from "../runner/report/json.ts";
import { makeReport, makeShard } from "./helpers/report-fixtures.ts";
import { makeSuite, removeSuites, runCli, tempDir } from "./helpers/cli.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  removeSuites();
});

function writerIn(): { writer: ReportWriter; dir: string; errors: string[] } {
  const dir = tempDir("shardguard-report-writer-");
  dirs.push(dir);
  const errors: string[] = [];
  const writer = new ReportWriter(
    { junit: join(dir, "junit.xml"), json: join(dir, "report.json"), ctrf: join(dir, "ctrf.json"), runDir: () => null },
    undefined,
    (message) => errors.push(message),
  );
  return { writer, dir, errors };
}

describe("ReportWriter", () => {
  test("a final write drops the interim write still waiting for its gap, and lands at once", async () => {
    const { writer, dir, errors } = writerIn();
    const builds: string[] = [];
    const report = (runId: string) => (): RunReport => {
      builds.push(runId);
      return { ...makeReport([makeShard({ index: 1 })]), runId };
    };
    await writer.write(false, report("first"));
    // Queued right after a write: it must wait INTERIM_WRITE_GAP_MS.
    const interim = writer.write(false, report("interim"));
    // Coalesces into the queued one.
    expect(writer.write(false, report("joined"))).toBe(interim);
    const began = performance.now();
    const final = await writer.write(true, report("final"));
    const tookMs = performance.now() - began;
    expect(await interim).toBeNull();
    expect(final.runId).toBe("final");
    expect(builds).toEqual(["first", "final"]);
    // The gap is 200 ms at least; a final write that waited it out would take longer.
    expect(tookMs).toBeLessThan(INTERIM_WRITE_GAP_MS);
    expect(JSON.parse(readFileSync(join(dir, "report.json"), "utf8")).runId).toBe("final");
    expect(errors).toEqual([]);
  });

  test("interim writes are spaced by the gap when no final write comes", async () => {
    const { writer } = writerIn();
    const stamps: number[] = [];
    const build = (): RunReport => {
      stamps.push(performance.now());
      return makeReport([makeShard({ index: 1 })]);
    };
    await writer.write(false, build);
    expect(await writer.write(false, build)).not.toBeNull();
    expect(stamps.length).toBe(2);
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(INTERIM_WRITE_GAP_MS - 5);
  });

  test("an interim write that cost CPU spaces the next by INTERIM_WRITE_COST_FACTOR times that CPU time", async () => {
    const { writer } = writerIn();
    const stamps: number[] = [];
    const cpuMs = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    let spentMs = 0;
    const build = (): RunReport => {
      stamps.push(performance.now());
      // 20 ms of the runner's own CPU, however loaded the machine: the gap follows CPU time, not wall time.
      const from = cpuMs();
      while (cpuMs() - from < 20) {}
      spentMs = cpuMs() - from;
      return makeReport([makeShard({ index: 1 })]);
    };
    await writer.write(false, build);
    const firstCost = spentMs;
    expect(await writer.write(false, build)).not.toBeNull();
    expect(stamps.length).toBe(2);
    // Over 200 ms: 20 × at least 20 ms of CPU is 400 ms at least.
    expect(INTERIM_WRITE_COST_FACTOR * firstCost).toBeGreaterThan(INTERIM_WRITE_GAP_MS);
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(INTERIM_WRITE_COST_FACTOR * firstCost - 5);
  });
});

describe("a final write that fails", () => {
  test("is recorded (an interim failure is not), so the run cannot exit 0", async () => {
    const { writer, dir, errors } = writerIn();
    // A non-empty directory where junit.xml goes: the rename over it fails.
    mkdirSync(join(dir, "junit.xml", "taken"), { recursive: true });
    const build = () => makeReport([makeShard({ index: 1 })]);
    await writer.write(false, build);
    expect(writer.finalWriteError).toBeNull();
    await writer.write(true, build);
    expect(writer.finalWriteError).toContain("junit.xml");
    expect(errors.length).toBe(2);
  });

  test("the CLI: every shard passed but junit.xml could not be written, so exit 1 and say why", async () => {
    // The test itself puts a directory where the runner's junit.xml goes, so every report write fails.
    const dir = makeSuite({
      "ok.test.ts": `import { test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
test("passes, and takes the junit path", () => {
  // An interim report may have landed there already (and may land again in between).
  for (let i = 0; i < 20; i++) {
    rmSync(process.env.TAKE_PATH!, { recursive: true, force: true });
    try {
      mkdirSync(process.env.TAKE_PATH + "/taken", { recursive: true });
      return;
    } catch {}
  }
});
`,
    });
    const junit = join(dir, "out", "junit.xml");
    const run = await runCli(["run", "--root", dir, "--junit", junit], { env: { TAKE_PATH: junit }, limitMs: 30_000 });
    expect(run.stdout).toContain("shardguard: 1 shard: 1 passed");
    expect(run.stdout).toContain("could not write the reports");
    expect(run.stdout).toContain("the final reports could not be written: exit 1");
    expect(run.code).toBe(1);
  }, 40_000);
});

describe("validReport", () => {
  test("a checked copy is handed back as is; any other report is parsed on every call, so a change is seen", () => {
    const report = makeReport([makeShard({ index: 1 })]);
    const valid = validReport(report);
    expect(valid).not.toBe(report);
    expect(validReport(valid)).toBe(valid);
    expect(renderJson(valid)).toBe(renderJson(report));
    report.runId = "changed";
    expect(JSON.parse(renderJson(report)).runId).toBe("changed");
    expect(validReport(report)).not.toBe(valid);
  });
});
