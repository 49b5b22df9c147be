/**
 * Bun's test urls made relative to the run root, as the plan names files
 * (the event model's `file` of a test, test-model.ts).
 */
import { realpathSync } from "node:fs";
import { isAbsolute, relative, sep } from "node:path";
import { repairLatin1 } from "./test-state.ts";

/**
 * Makes absolute urls relative to one root, forward slashes. Two measured
 * quirks are undone: Bun 1.4.4 sends non-ASCII Latin letters as their UTF-8
 * bytes read as Latin-1 ("é" arrives as "Ã©"), and it sends real paths, so
 * a root reached through a symlink is compared by its real path too.
 */
export class RootRelativePaths {
  /** The root as given and, when it differs, its real path. */
  private readonly roots: string[];
  /** The last url made relative, and the result. */
  private lastUrl = "";
  private lastFile = "";

  /** @param root absolute directory (the run root); it need not exist on this disk */
  constructor(private readonly root: string) {
    let real = root;
    try {
      real = realpathSync(root);
    } catch {
      // A root that is not on this disk (tests, journals read elsewhere): keep it as given.
    }
    this.roots = real === root ? [root] : [root, real];
  }

  /**
   * `url` relative to the root; a relative url is kept (separators made
   * forward slashes); an url outside the root comes out as `../…`.
   */
  relative(url: string): string {
    // A file's tests all carry its url: one path computation per run of
    // equal urls (the channel's byte reader hands over the same string
    // object for equal urls, so this compare is by identity then).
    if (url !== this.lastUrl) {
      this.lastFile = this.compute(url);
      this.lastUrl = url;
    }
    return this.lastFile;
  }

  private compute(url: string): string {
    if (!isAbsolute(url)) return url.split(sep).join("/");
    for (const candidate of [url, repairLatin1(url)]) {
      for (const root of this.roots) {
        const rel = relative(root, candidate);
        if (rel && !rel.startsWith("..") && !isAbsolute(rel)) return rel.split(sep).join("/");
      }
    }
    return relative(this.root, url).split(sep).join("/");
  }
}
