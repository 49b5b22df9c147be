/**
 * The tests of one run as each of its three reports shows them
 * (`OUT/report.json`, `OUT/ctrf.json`, `OUT/junit.xml`), reduced to what
 * every format carries, so a test can assert that all three agree.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { readReport } from "./cli.ts";
import { validateJUnitXml } from "./xsd.ts";
import { parseJUnit } from "./junit-xml.ts";

/** One test as a report shows it: our status (CTRF's `rawStatus`, JUnit's element), duration in ms. */
export interface ShownTest {
  name: string;
  status: string;
  durationMs: number;
  message?: string;
}

/** JUnit's element inside a testcase, as our status (docs/reports.md table). */
function junitStatus(testcase: Record<string, unknown>): string {
  const error = testcase.error as Record<string, string> | undefined;
  if (error)
    return (
      ({ timeout: "timed-out", crash: "crashed", "never-started": "never-started" } as Record<string, string>)[
        error["@_type"]!
      ] ?? `error:${error["@_type"]}`
    );
  if (testcase.failure) return "failed";
  const skipped = testcase.skipped as Record<string, string> | string | undefined;
  if (skipped !== undefined) return typeof skipped === "object" && skipped["@_type"] === "todo" ? "todo" : "skipped";
  return "passed";
}

/**
 * The three reports of the run in `dir/.shardguard`, each as a list of
 * tests in report order. The JUnit file is validated against the XSD first
 * (throws when it is invalid) unless `xsd` is false: xmllint-wasm runs out
 * of memory on a document of about 20 MB.
 */
export async function threeReports(
  dir: string,
  xsd = true,
): Promise<{ json: ShownTest[]; ctrf: ShownTest[]; junit: ShownTest[] }> {
  const out = path.join(dir, ".shardguard");
  const report = readReport(dir);
  const json = report.shards.flatMap((s) =>
    s.tests.map((t) => ({
      name: t.name,
      status: t.status,
      durationMs: t.durationMs,
      ...(t.failure ? { message: t.failure.message } : {}),
    })),
  );
  const ctrfDoc = JSON.parse(readFileSync(path.join(out, "ctrf.json"), "utf8")) as {
    results: { tests: { name: string; rawStatus: string; duration: number; message?: string }[] };
  };
  const ctrf = ctrfDoc.results.tests.map((t) => ({
    name: t.name,
    status: t.rawStatus,
    durationMs: t.duration,
    ...(t.message !== undefined ? { message: t.message } : {}),
  }));
  const xml = readFileSync(path.join(out, "junit.xml"), "utf8");
  const validity = xsd ? await validateJUnitXml(xml) : { valid: true, errors: [] };
  if (!validity.valid) throw new Error(`junit.xml is not valid: ${validity.errors.join("; ")}`);
  const doc = parseJUnit(xml);
  const cases = (doc.testsuites.testsuite as { testcase: Record<string, unknown>[] }[]).flatMap((s) => s.testcase);
  const junit = cases.map((c) => {
    const status = junitStatus(c);
    const element = (c.error ?? c.failure) as Record<string, string> | undefined;
    return {
      name: String(c["@_name"]),
      status,
      durationMs: Number(c["@_time"]) * 1000,
      ...(element?.["@_message"] !== undefined ? { message: element["@_message"] } : {}),
    };
  });
  return { json, ctrf, junit };
}
