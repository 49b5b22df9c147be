/**
 * One way for tests to read a JUnit XML file: attributes under fast-xml-parser's `@_` prefix,
 * and `testsuite`, `testcase` and `property` always arrays (a one-suite file reads like many).
 */
import { XMLParser } from "fast-xml-parser";

const ARRAYS = ["testsuite", "testcase", "property"];

/** Options of {@link parseJUnit}. */
export interface ParseJUnitOptions {
  /** Decode numeric character references such as `&#10;` as well as XML's five named entities. */
  htmlEntities?: boolean;
  /** Element names always read as arrays (default `testsuite`, `testcase`, `property`), e.g. to count failures. */
  arrays?: readonly string[];
}

/** Parses JUnit XML into `{ testsuites: { testsuite: [{ testcase: [...] }] } }`, attributes as `@_name`. */
// biome-ignore lint/suspicious/noExplicitAny: fast-xml-parser's output, read field by field by each test.
export function parseJUnit(xml: string, options: ParseJUnitOptions = {}): any {
  return new XMLParser({
    ignoreAttributes: false,
    htmlEntities: options.htmlEntities ?? false,
    isArray: (name) => (options.arrays ?? ARRAYS).includes(name),
  }).parse(xml);
}
