/**
 * The JSON Schema of report.json, generated from the zod schema the code validates with (a test compares the
 * committed file with a fresh one). Regenerate it: `bun runner/report/json-schema.ts`.
 */
import { join } from "node:path";
import { z } from "zod";
import { REPORT_SCHEMA_VERSION, RunReportSchema } from "../results/report-model.ts";
import { writeFileAtomic } from "../util/atomic.ts";

/** Where the generated schema is committed, relative to the repository root. */
export const REPORT_SCHEMA_PATH = "docs/report.schema.json";

/** JSON Schema (draft 2020-12) of renderJson's output: the output side, so fields with defaults are required. */
export function reportJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(RunReportSchema, { target: "draft-2020-12", io: "output" }),
    title: `shardguard run report, schema version ${REPORT_SCHEMA_VERSION}`,
  };
}

/** The file's exact text: 2-space JSON with a trailing newline. */
export function reportJsonSchemaText(): string {
  return `${JSON.stringify(reportJsonSchema(), null, 2)}\n`;
}

if (import.meta.main) {
  const target = join(import.meta.dir, "..", "..", REPORT_SCHEMA_PATH);
  await writeFileAtomic(target, reportJsonSchemaText());
  console.log(`wrote ${REPORT_SCHEMA_PATH}`);
}
