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

/**
 * What the attribution keeps of one test or describe: fields on the event
 * model's own record (test-model.ts), so mapping an event costs no map entry of
 * its own (four maps keyed by id cost ~0.15 s of CPU per 100,000 tests,
 * bench/README.md).
 */
export interface AttributionEntry {
  /** The mapped planned file, or undefined when none is provable (yet). */
  mapped: string | undefined;
  /** True when the event's own url is its mapped file (its line is the test file's). */
  own: boolean;
  /** Mapped by rule 4 (directly or through a parent): undone if its block names a second file. */
  viaBlock: boolean;
  /** The found block it arrived in. */
  block: Block | undefined;
}

/** A new entry's attribution fields, before {@link FileAttribution.found}. */
export const UNATTRIBUTED = { mapped: undefined, own: false, viaBlock: false, block: undefined } as const;

/** The found events between two `start`/`end` events. */
export interface Block {
  entries: AttributionEntry[];
  /** Planned files named by the urls of its events. */
  named: Set<string>;
  started: boolean;
  /**
   * How many of `entries` {@link FileAttribution.settle} has already handled, and
   * whether it has seen the block name a second file. Settling only the entries
   * added since the last call keeps a block linear: re-walking every entry on
   * each `found` made a file of 100,000 tests O(n²) (50 s, bench/README.md).
   */
  settled: number;
  conflicted: boolean;
}

export class FileAttribution {
  private readonly planned: ReadonlySet<string> | null;
  private readonly only: string | undefined;
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
   * Records a `found` event (test or describe): sets `entry`'s fields.
   * `urlFile` is its url made relative to the run root; `parent` the entry
   * of its `parentId`, when that was found.
   */
  found(entry: AttributionEntry, urlFile: string, parent: AttributionEntry | undefined): void {
    let block = this.open;
    if (block === null) {
      block = this.open = { entries: [], named: new Set(), started: false, settled: 0, conflicted: false };
      this.blocks.push(block);
    }
    block.entries.push(entry);
    entry.block = block;
    if (this.planned === null || this.planned.has(urlFile)) {
      entry.mapped = urlFile;
      entry.own = true;
      if (this.planned !== null) {
        block.named.add(urlFile);
        // The common case, a block of one file's own tests: nothing to settle.
        if (block.named.size === 1 && block.settled === block.entries.length - 1) block.settled += 1;
        else this.settle(block);
      }
      return;
    }
    const inherited = this.only ?? parent?.mapped;
    if (inherited === undefined) {
      this.settle(block);
      return;
    }
    entry.mapped = inherited;
    if (parent?.viaBlock) entry.viaBlock = true;
  }

  /** Records a `start` or `end` of `entry` (undefined: an unknown id): the open found block is complete. */
  progressed(entry: AttributionEntry | undefined): void {
    this.open = null;
    if (entry?.block) entry.block.started = true;
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
      for (const entry of block.entries) entry.mapped ??= file;
    });
  }

  /** Rule 4: a block naming one planned file maps its unmapped events to it (children after their parents). */
  private settle(block: Block): void {
    if (block.named.size > 1) {
      // The first time: undo every entry mapped through the block; later, only
      // the entries added since (settle maps none once the block is conflicted).
      const from = block.conflicted ? block.settled : 0;
      block.conflicted = true;
      for (let i = from; i < block.entries.length; i++) {
        const entry = block.entries[i]!;
        if (entry.viaBlock) {
          entry.viaBlock = false;
          entry.mapped = undefined;
        }
      }
      block.settled = block.entries.length;
      return;
    }
    const [file] = block.named;
    if (file === undefined) return;
    // Entries before `settled` were handled while the block named this same file.
    for (let i = block.settled; i < block.entries.length; i++) {
      const entry = block.entries[i]!;
      if (entry.mapped !== undefined) continue;
      entry.mapped = file;
      entry.viaBlock = true;
    }
    block.settled = block.entries.length;
  }
}
