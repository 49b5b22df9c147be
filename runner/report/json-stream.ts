/**
 * Pieces of `JSON.stringify(value, null, 2)` for documents too large to
 * hold as one string: the document's shell is stringified whole, and one
 * array in it is produced item by item, each item stringified on its own.
 * The joined pieces are byte for byte what one `JSON.stringify` of the
 * whole document gives (test/report-stream.test.ts compares them).
 */

/** Stands for the streamed array in the shell while the shell is stringified. */
const PLACEHOLDER = "\u0000shardguard: streamed array\u0000";

/** The indentation of `JSON.stringify(…, null, 2)` at nesting `depth`. */
const indent = (depth: number) => "  ".repeat(depth);

/** The text around a value nested `depth` arrays deep, by depth: what {@link nestedJson} cuts off. */
const wrappers: { before: number; after: number }[] = [];

/**
 * `JSON.stringify(value, null, 2)` as it appears nested `depth` levels deep
 * in a larger document: every line after the first indented by `depth`
 * levels. It is exactly that: the value is stringified inside `depth`
 * one-item arrays and the arrays' own text is cut off (faster than
 * re-indenting the text, and indented by JSON.stringify itself).
 */
export function nestedJson(value: unknown, depth: number): string {
  if (depth === 0) return JSON.stringify(value, null, 2);
  let wrapped: unknown = value;
  for (let i = 0; i < depth; i++) wrapped = [wrapped];
  const text = JSON.stringify(wrapped, null, 2);
  let cut = wrappers[depth];
  if (cut === undefined) {
    let probe: unknown = 0;
    for (let i = 0; i < depth; i++) probe = [probe];
    const around = JSON.stringify(probe, null, 2);
    cut = wrappers[depth] = { before: around.indexOf("0"), after: around.length - around.indexOf("0") - 1 };
  }
  return text.slice(cut.before, text.length - cut.after);
}

/**
 * Entries stringified together by the streamed renderers: one
 * JSON.stringify of a batch gives one flat string for all of them, where
 * one call per entry (plus the separator joined to each) left ~300,000
 * small strings for 100,000 tests to join and encode (bench/README.md).
 */
export const ENTRY_BATCH = 512;

/**
 * Characters of text (names, failure texts) after which a batch is full
 * before ENTRY_BATCH: 512 failing entries with capped 64 KiB texts would
 * otherwise be tens of MiB in one string.
 */
export const BATCH_CHARS = 256 * 1024;

/** Items collected for {@link jsonItems} at one depth, a batch at a time. */
export class JsonBatch {
  private items: unknown[] = [];
  private chars = 0;

  constructor(private readonly depth: number) {}

  /**
   * Adds an item holding about `chars` characters of text.
   * @returns the batch's text when it is now full (ENTRY_BATCH items or BATCH_CHARS), else null
   */
  add(item: unknown, chars: number): string | null {
    this.items.push(item);
    this.chars += chars;
    return this.items.length >= ENTRY_BATCH || this.chars >= BATCH_CHARS ? this.take() : null;
  }

  /** The text of the items collected so far, which are then forgotten; null when there are none. */
  take(): string | null {
    if (this.items.length === 0) return null;
    const text = jsonItems(this.items, this.depth);
    this.items = [];
    this.chars = 0;
    return text;
  }
}

/**
 * `items` as consecutive items of an array whose items sit `depth` (≥ 1)
 * levels deep: `nestedJson(item, depth)` of each, joined by the line break
 * and indentation JSON.stringify puts between array items. It is exactly
 * that: the items stringified as one array one level up, its brackets cut
 * off. One such text can stand for several items among the `items` of
 * {@link jsonWithStreamedArray}, which puts the same separator between them.
 * Items must be JSON values (an `undefined` would become `null`); `items`
 * must not be empty.
 */
export function jsonItems(items: readonly unknown[], depth: number): string {
  const text = nestedJson(items, depth - 1);
  // "[\n" + indent(depth) before the first item; "\n" + indent(depth - 1) + "]" after the last.
  return text.slice(2 + 2 * depth, text.length - 2 * depth);
}

/**
 * The pieces of `nestedJson(shell, depth)` with the array at `path` (keys
 * from the shell down; the last one must be a key of its object, whose key
 * order places it) made of `items`. The array's owner sits at
 * `owner = depth + path.length - 1`; `items` yields each array item
 * already as `nestedJson(item, owner + 2)`, either as one string or as the
 * pieces of one (an item that streams an array of its own), or several
 * consecutive items as one string ({@link jsonItems}).
 */
export function* jsonWithStreamedArray(
  shell: object,
  path: readonly string[],
  depth: number,
  items: Iterable<string | Iterable<string>>,
): Generator<string, void, undefined> {
  const key = path[path.length - 1]!;
  const withPlaceholder = (value: object, rest: readonly string[]): object =>
    rest.length === 1
      ? { ...value, [key]: PLACEHOLDER }
      : { ...value, [rest[0]!]: withPlaceholder((value as Record<string, object>)[rest[0]!]!, rest.slice(1)) };
  const text = nestedJson(withPlaceholder(shell, path), depth);
  depth += path.length - 1;
  // Keys are the model's own, and a string value's quotes are escaped, so
  // the member `"key": "<placeholder>"` cannot occur anywhere else.
  const member = `${JSON.stringify(key)}: ${JSON.stringify(PLACEHOLDER)}`;
  const at = text.indexOf(member);
  if (at === -1) throw new Error(`jsonWithStreamedArray: no member ${JSON.stringify(key)} in the shell`);
  yield text.slice(0, at + member.length - JSON.stringify(PLACEHOLDER).length);
  const itemIndent = indent(depth + 2);
  let first = true;
  for (const item of items) {
    const head = `${first ? "[\n" : ",\n"}${itemIndent}`;
    first = false;
    if (typeof item === "string") yield head + item;
    else {
      yield head;
      yield* item;
    }
  }
  yield first ? "[]" : `\n${indent(depth + 1)}]`;
  yield text.slice(at + member.length);
}
