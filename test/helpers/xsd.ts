/**
 * Validates JUnit XML against the committed docs/schemas/junit-10-extended.xsd
 * with libxml2 compiled to WebAssembly (the `xmllint-wasm` package), so the
 * check behaves like `xmllint --noout --schema` (docs/reports.md) without needing a
 * system package on a fresh clone.
 */
import { join } from "node:path";
import { validateXML } from "xmllint-wasm";

const SCHEMA_PATH = join(import.meta.dir, "..", "..", "docs", "schemas", "junit-10-extended.xsd");

let schemaText: Promise<string> | undefined;

/**
 * `valid` is true only when the document is well-formed XML 1.0 and matches
 * the schema; `errors` holds xmllint's messages (well-formedness errors
 * included) otherwise.
 * @throws when xmllint itself fails for another reason (e.g. the schema does
 *   not compile), so that a broken validator can never look like a verdict.
 */
export async function validateJUnitXml(xml: string): Promise<{ valid: boolean; errors: string[] }> {
  schemaText ??= Bun.file(SCHEMA_PATH).text();
  const result = await validateXML({
    xml: [{ fileName: "report.xml", contents: xml }],
    schema: [{ fileName: "junit-10-extended.xsd", contents: await schemaText }],
  });
  return { valid: result.valid, errors: result.errors.map((e) => e.rawMessage) };
}
