/** Bun's test urls made relative to the run root, as the plan names files. */
import { realpathSync } from "node:fs";
import { isAbsolute, relative, sep } from "node:path";
import { repairLatin1 } from "./test-state.ts";

/**
 * Makes absolute urls relative to one root, forward slashes, undoing two Bun quirks: UTF-8 read as Latin-1 ("é"
 * as "Ã©"), and real paths (a root through a symlink is compared by its real path too).
 */
export class RootRelativePaths {
  /** The root as given and, when it differs, its real path. */
  private readonly roots: string[];
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

  /** `url` relative to the root, forward slashes; a relative url is kept; one outside the root becomes `../…`. */
  relative(url: string): string {
    // A file's tests share one url string (compact.ts): one computation per run of equal urls.
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
