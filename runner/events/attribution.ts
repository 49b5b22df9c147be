/**
 * Which planned file a test belongs to when its `found` url does not say: Bun gives the url and line of the
 * `test()` / `describe()` call, so tests defined through a helper module carry the helper's (measured, Bun 1.4.4).
 * The rules, in order, map only what is provable:
 * 1. its url is a planned file of the shard: that file, with its line;
 * 2. the shard has one planned file: that file;
 * 3. a describe it is nested in was mapped: that describe's file;
 * 4. its found block (the `found`s between two `start`/`end`s, all from one file) names one planned file;
 * 5. after the run, started blocks in order against the preload's file records, when the counts agree.
 * Only rule 1 keeps the line (else it is the helper's); an unmapped test keeps the helper's, unplanned, file.
 */

/** What attribution keeps of a test or describe: fields on the model's record, no map per id (bench/README.md). */
export interface AttributionEntry {
  /** The mapped planned file, or undefined when none is provable (yet). */
  mapped: string | undefined;
  /** True when the event's own url is its mapped file (its line is the test file's). */
  own: boolean;
  /** Mapped by rule 4 (directly or through a parent): undone if its block names a second file. */
  viaBlock: boolean;
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
  /** Entries {@link FileAttribution.settle} has handled: settling only new ones keeps it linear (bench/README.md). */
  settled: number;
  conflicted: boolean;
}

/** Maps a shard's found events to its planned files by the module's rules, as they arrive. */
export class FileAttribution {
  private readonly planned: ReadonlySet<string> | null;
  private readonly only: string | undefined;
  private readonly blocks: Block[] = [];
  private open: Block | null = null;

  /** @param planned the shard's planned files, relative to the run root; undefined keeps every url as it is */
  constructor(planned?: readonly string[]) {
    this.planned = planned ? new Set(planned) : null;
    this.only = planned?.length === 1 ? planned[0] : undefined;
  }

  /** Records a `found` into `entry`; `urlFile` is its url relative to the root, `parent` its parent's entry. */
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

  /** Rule 5: maps started blocks' unmapped tests to the preload's file records (relative, in order). */
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
      // Undo every entry mapped through the block the first time; later only those added since.
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
