/**
 * Bun's run order of a shard's tests from their `found` events: Bun sends them breadth first but runs tests depth
 * first in declaration order (docs/bun-behaviour.md, "Inspector test events"), so a depth-first walk of the found
 * tree gives the starts' order, which results/start-count.ts matches the preload's start count against.
 */

/** A `found` block (test or describe) as the event model keeps it. */
export interface FoundBlock {
  /** The enclosing block's id; undefined at the top level. */
  parentId: number | undefined;
  /** Arrival position among all `found` events of the shard, tests and describes. */
  foundSeq: number;
}

/**
 * The run-order position (0 first) of each test id. Orphans count as top level; blocks in a parent loop follow in
 * arrival order. Iterative, so deep nesting cannot overflow the stack.
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
