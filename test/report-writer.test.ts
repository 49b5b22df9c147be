/**
 * ReportWriter (runner/app/report-writer.ts): interim writes coalesce and are
 * spaced apart, but the final write never waits out that spacing.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { INTERIM_WRITE_GAP_MS, ReportWriter } from "../runner/app/report-writer.ts";
import { validReport, type RunReport } from "../runner/results/model.ts";
import { renderJson } from "../runner/report/json.ts";
import { makeReport, makeShard } from "./helpers/report-fixtures.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function writerIn(): { writer: ReportWriter; dir: string; errors: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "shardguard-report-writer-"));
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
