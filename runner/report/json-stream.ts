/**
 * `JSON.stringify(value, null, 2)` in pieces, for documents too large to hold: the shell whole, one array in it item
 * by item; joined, byte for byte the one-call text (test/report-stream.test.ts compares them).
 */

/** Stands for the streamed array in the shell while the shell is stringified. */
const PLACEHOLDER = "\u0000shardguard: streamed array\u0000";

/** The indentation of `JSON.stringify(…, null, 2)` at nesting `depth`. */
const indent = (depth: number) => "  ".repeat(depth);

/** The text around a value nested `depth` arrays deep, by depth: what {@link nestedJson} cuts off. */
const wrappers: { before: number; after: number }[] = [];

/** `JSON.stringify(value, null, 2)` as nested `depth` levels deep: stringified inside one-item arrays, cut out. */
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

/** Entries stringified per call by the streamed renderers: one flat string per batch, not many small ones. */
export const ENTRY_BATCH = 512;

/** Characters of text after which a batch is full before ENTRY_BATCH: capped failure texts add up fast. */
export const BATCH_CHARS = 256 * 1024;

/** Items collected for {@link jsonItems} at one depth, a batch at a time. */
export class JsonBatch {
  private items: unknown[] = [];
  private chars = 0;

  constructor(private readonly depth: number) {}

  /** Adds an item of about `chars` characters; returns the batch's text when it is now full, else null. */
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
 * `items` (JSON values, at least one) as consecutive items of an array whose items sit `depth` (≥ 1) levels deep,
 * joined as JSON.stringify joins them: one text can stand for several items of {@link jsonWithStreamedArray}.
 */
export function jsonItems(items: readonly unknown[], depth: number): string {
  const text = nestedJson(items, depth - 1);
  // "[\n" + indent(depth) before the first item; "\n" + indent(depth - 1) + "]" after the last.
  return text.slice(2 + 2 * depth, text.length - 2 * depth);
}

/**
 * The pieces of `nestedJson(shell, depth)` with the array at `path` (keys from the shell down) made of `items`, each
 * already `nestedJson(item, depth + path.length + 1)`: one string, pieces of one, or several ({@link jsonItems}).
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
  // Keys are the model's own and string quotes are escaped, so this member occurs nowhere else.
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
