/**
 * Which planned test file a test belongs to, when Bun's `found` event does
 * not say.
 *
 * Bun 1.4.4 puts in `TestReporter.found` the url and line of the `test()` /
 * `describe()` call itself. A suite that defines its tests through a helper
 * module (gstack's `describeIfSelected` / `testConcurrentIfSelected` in
 * test/helpers/e2e-helpers.ts) therefore gets the helper's url and line for
 * every test and describe: measured, with the describe too in the helper,
 * no `parentId` chain reaches the test file. (Bun's JUnit names the right
 * file but the helper's line.) Such an event is mapped to a planned file by
 * what is provable, in this order:
 *
 * 1. its url is a planned file of the shard: that file, with its line;
 * 2. the shard has one planned file: that file;
 * 3. a describe it is nested in was mapped: that describe's file;
 * 4. its "found block" names exactly one planned file: that file. Bun loads
 *    and runs a shard's files one at a time and sends every `found` of a
 *    file before its first `start` (measured), so the `found` events between
 *    two `start`/`end` events come from one file;
 * 5. after the run, the blocks in which a test started, in order, against
 *    the child preload's file records (one `f<Bun.main>` at the first test
 *    start of each file, runner/child/shard-preload.ts), when both counts
 *    agree (they do not with `--rerun-each`, where a file runs twice in a row).
 *
 * Only in case 1 is the line kept: otherwise it is the helper's line, and a
 * report would present it as a line of the test file. A test none of the
 * rules maps keeps the helper's file, which is not planned; the verdict then
 * treats its planned file as one without per-test data.
 */

/** The found events between two `start`/`end` events. */
interface Block {
  ids: number[];
  /** Planned files named by the urls of its events. */
  named: Set<string>;
  started: boolean;
  /**
   * How many of `ids` {@link FileAttribution.settle} has already handled, and
   * whether it has seen the block name a second file. Settling only the ids
   * added since the last call keeps a block linear: re-walking every id on
   * each `found` made a file of 100,000 tests O(n²) (50 s, bench/README.md).
   */
  settled: number;
  conflicted: boolean;
}

export class FileAttribution {
  private readonly planned: ReadonlySet<string> | null;
  private readonly only: string | undefined;
  /** Mapped file of each test and describe id. */
  private readonly fileOf = new Map<number, string>();
  /** Ids whose url is their mapped file (their line is the test file's). */
  private readonly own = new Set<number>();
  /** Ids mapped by rule 4 (directly or through a parent): undone if their block names a second file. */
  private readonly viaBlock = new Set<number>();
  private readonly blockOf = new Map<number, Block>();
  private readonly blocks: Block[] = [];
  private open: Block | null = null;

  /**
   * @param planned the shard's planned files, relative to the run root as
   *   the plan names them; undefined keeps every url as it is (no mapping)
   */
  constructor(planned?: readonly string[]) {
    this.planned = planned ? new Set(planned) : null;
    this.only = planned?.length === 1 ? planned[0] : undefined;
  }

  /**
   * Records a `found` event (test or describe). `urlFile` is its url made
   * relative to the run root.
   */
  found(id: number, urlFile: string, parentId: number | undefined): void {
    if (!this.open) {
      this.open = { ids: [], named: new Set(), started: false, settled: 0, conflicted: false };
      this.blocks.push(this.open);
    }
    const block = this.open;
    block.ids.push(id);
    this.blockOf.set(id, block);
    if (this.planned === null || this.planned.has(urlFile)) {
      this.fileOf.set(id, urlFile);
      this.own.add(id);
      if (this.planned !== null) {
        block.named.add(urlFile);
        this.settle(block);
      }
      return;
    }
    const inherited = this.only ?? (parentId !== undefined ? this.fileOf.get(parentId) : undefined);
    if (inherited === undefined) return this.settle(block);
    this.fileOf.set(id, inherited);
    if (parentId !== undefined && this.viaBlock.has(parentId)) this.viaBlock.add(id);
  }

  /** Records a `start` or `end`: the open found block is complete. */
  progressed(id: number): void {
    this.open = null;
    const block = this.blockOf.get(id);
    if (block) block.started = true;
  }

  /**
   * Rule 5: maps the unmapped tests of each block in which a test started to
   * the file the child preload recorded at that position. `filesStarted` are
   * relative to the root, in the preload's order. Does nothing when the
   * counts differ (nothing is then provable).
   */
  applyFileStarts(filesStarted: readonly string[]): void {
    if (this.planned === null) return;
    const started = this.blocks.filter((b) => b.started);
    if (started.length !== filesStarted.length) return;
    started.forEach((block, i) => {
      const file = filesStarted[i]!;
      if (!this.planned!.has(file)) return;
      if (block.named.size > 0 && !block.named.has(file)) return; // the records disagree: prove nothing
      for (const id of block.ids) if (!this.fileOf.has(id)) this.fileOf.set(id, file);
    });
  }

  /** The mapped file of `id`, or undefined when none is provable. */
  file(id: number): string | undefined {
    return this.fileOf.get(id);
  }

  /** True when the event's own url is its mapped file, so its line is a line of that file. */
  ownLine(id: number): boolean {
    return this.own.has(id);
  }

  /** Rule 4: a block naming one planned file maps its unmapped events to it (children after their parents). */
  private settle(block: Block): void {
    if (block.named.size > 1) {
      // The first time: undo every id mapped through the block; later, only
      // the ids added since (settle maps none once the block is conflicted).
      const from = block.conflicted ? block.settled : 0;
      block.conflicted = true;
      for (let i = from; i < block.ids.length; i++) {
        const id = block.ids[i]!;
        if (this.viaBlock.delete(id)) this.fileOf.delete(id);
      }
      block.settled = block.ids.length;
      return;
    }
    const [file] = block.named;
    if (file === undefined) return;
    // Ids before `settled` were handled while the block named this same file.
    for (let i = block.settled; i < block.ids.length; i++) {
      const id = block.ids[i]!;
      if (this.fileOf.has(id)) continue;
      this.fileOf.set(id, file);
      this.viaBlock.add(id);
    }
    block.settled = block.ids.length;
  }
}
