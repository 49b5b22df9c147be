/**
 * Bun's run order of a shard's tests, from their `found` events alone.
 *
 * Bun sends a file's `found` events breadth first (every top-level block,
 * then the blocks inside each describe), but runs, and so starts, its tests
 * depth first: each block's children in the order they were declared
 * (measured on Bun 1.3.13, 1.4.4 and 1.4.5, with nested describes,
 * `test.each` tables, `--concurrent` and `--retry`). Siblings arrive in
 * declaration order and files one after another, so a depth-first walk of the
 * found tree, each block's children in arrival order, is the order of the
 * starts: what the child preload's start count is matched against when the
 * last events are lost (results/start-count.ts).
 */

/** A `found` block (test or describe) as the event model keeps it. */
export interface FoundBlock {
  /** The enclosing block's id; undefined at the top level. */
  parentId: number | undefined;
  /** Arrival position among all `found` events of the shard, tests and describes. */
  foundSeq: number;
}

/**
 * The run-order position (0 for the first test Bun runs) of each test id.
 * A block whose parent was never found counts as top level; blocks in a
 * parent loop (inconsistent input) are not reached from the top and follow
 * everything else in arrival order. Iterative: a deep nesting cannot
 * overflow the stack. Ids are unique across the two maps (the model keeps a
 * block's first `found` only).
 */
export function runOrder(describes: ReadonlyMap<number, FoundBlock>, tests: ReadonlyMap<number, FoundBlock>) {
  const blocks: { id: number; block: FoundBlock; isTest: boolean }[] = [];
  for (const [id, block] of describes) blocks.push({ id, block, isTest: false });
  for (const [id, block] of tests) blocks.push({ id, block, isTest: true });
  blocks.sort((a, b) => a.block.foundSeq - b.block.foundSeq);
  const top: number[] = [];
  const children = new Map<number, number[]>();
  for (const { id, block } of blocks) {
    const parent = block.parentId;
    if (parent === undefined || parent === id || !(describes.has(parent) || tests.has(parent))) top.push(id);
    else {
      const list = children.get(parent);
      if (list === undefined) children.set(parent, [id]);
      else list.push(id);
    }
  }
  const order = new Map<number, number>();
  const seen = new Set<number>();
  const walk = (roots: readonly number[]) => {
    // The blocks still to visit, the next one on top.
    const stack = [...roots].reverse();
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      if (tests.has(id)) order.set(id, order.size);
      const inside = children.get(id);
      if (inside !== undefined) for (let i = inside.length - 1; i >= 0; i--) stack.push(inside[i]!);
    }
  };
  walk(top);
  if (seen.size < blocks.length) walk(blocks.filter((b) => !seen.has(b.id)).map((b) => b.id));
  return order;
}
