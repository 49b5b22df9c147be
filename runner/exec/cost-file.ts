/** A shard's cost file (docs/cost.md): made empty before each spawn, read as it grows, each line timed on arrival. */
import { closeSync, fstatSync, openSync, readSync, writeFileSync } from "node:fs";
import { CostLedger, type ShardSpend } from "../cost/ledger.ts";

/** A line longer than this is refused unread, so a runaway writer cannot grow the runner's memory. */
const MAX_LINE_BYTES = 64 * 1024;
const CHUNK_BYTES = 64 * 1024;

/**
 * The runner's side of one attempt's cost file. {@link drain} reads what was appended since the last call and
 * charges each line without a `test` to `inFlight()` at that moment; the attempt drains before each `end` event,
 * so a line written while a test ran is read while the model still has that test in flight.
 */
export class CostFile {
  private readonly ledger = new CostLedger();
  private fd: number | null;
  private position = 0;
  private carry = "";
  private carryOverlong = false;
  private readonly decoder = new TextDecoder();

  /**
   * Makes `file` empty and keeps it open for reading (a test deleting it loses nothing already written).
   * @throws the file system's error when it cannot be made
   */
  constructor(readonly file: string) {
    writeFileSync(file, "", { mode: 0o600 });
    this.fd = openSync(file, "r");
  }

  /** Reads the lines appended since the last call; never throws (a read error ends reading). */
  drain(inFlight: () => string | null): void {
    if (this.fd === null) return;
    try {
      const size = fstatSync(this.fd).size;
      if (size <= this.position) return;
      const name = inFlight();
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, size - this.position));
      while (this.position < size) {
        const n = readSync(this.fd, buffer, 0, Math.min(buffer.length, size - this.position), this.position);
        if (n <= 0) break;
        this.position += n;
        this.take(this.decoder.decode(buffer.subarray(0, n), { stream: true }), name);
      }
    } catch {
      this.close();
    }
  }

  /** Drains once more, takes a last line without its newline, and closes the file. */
  finish(inFlight: () => string | null): ShardSpend {
    this.drain(inFlight);
    if (this.carryOverlong) this.ledger.addOverlong();
    else if (this.carry !== "") this.ledger.add(this.carry, inFlight());
    this.carry = "";
    this.close();
    return this.ledger.current;
  }

  /** The spend so far. */
  get spend(): ShardSpend {
    return this.ledger.current;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private take(text: string, inFlight: string | null): void {
    const parts = text.split("\n");
    for (let i = 0; i < parts.length - 1; i++) {
      const line = this.carry + parts[i];
      if (this.carryOverlong || line.length > MAX_LINE_BYTES) this.ledger.addOverlong();
      else this.ledger.add(line, inFlight);
      this.carry = "";
      this.carryOverlong = false;
    }
    const rest = parts[parts.length - 1]!;
    if (this.carryOverlong) return;
    this.carry += rest;
    if (this.carry.length > MAX_LINE_BYTES) {
      this.carry = "";
      this.carryOverlong = true;
    }
  }
}
