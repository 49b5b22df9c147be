/**
 * Readers that poll a file while it is rewritten, counting reads that are
 * not one of the complete versions: the check that an atomic writer never
 * exposes a half-written file.
 */
import { readFile } from "node:fs/promises";

/**
 * Starts `count` readers polling `target` until the returned `stop` is
 * awaited. A missing file (not created yet) is not a read.
 *
 * @param complete every text a reader may legitimately see
 * @returns stop(): ends the polling, resolves to how many reads there were and how many were torn
 */
export function pollForTornReads(
  target: string,
  complete: ReadonlySet<string>,
  count: number,
): { stop: () => Promise<{ reads: number; torn: number }> } {
  let polling = true;
  let reads = 0;
  let torn = 0;
  const reader = async () => {
    while (polling) {
      let text: string;
      try {
        text = await readFile(target, "utf8");
      } catch {
        await Bun.sleep(0);
        continue;
      }
      reads += 1;
      if (!complete.has(text)) torn += 1;
    }
  };
  const readers = Array.from({ length: count }, reader);
  return {
    stop: async () => {
      polling = false;
      await Promise.all(readers);
      return { reads, torn };
    },
  };
}
