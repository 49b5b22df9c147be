/**
 * The import-direction check behind test/layers.test.ts (docs/architecture.md,
 * "Layers"). Every source folder holds a `DEPS.txt` naming, one per line, the
 * folders (repository-relative) its files may import; a file may always import
 * its own folder. Imports are read with TypeScript's own pre-processor, so
 * `import type`, `export … from` and dynamic `import()` all count.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/** One import of one file: repository-relative paths. */
export interface ImportEdge {
  from: string;
  to: string;
}

/** What {@link checkLayers} found; both lists empty means the layering holds. */
export interface LayerReport {
  /** Imports of a folder its DEPS.txt does not allow, or from a folder with no DEPS.txt. */
  violations: string[];
  /** Import cycles among files, each as the files of one strongly connected component. */
  cycles: string[][];
  /** Every file read, for the caller's sanity checks. */
  files: string[];
}

function sourceFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(root, dir))) {
    const rel = path.posix.join(dir, name);
    const st = statSync(path.join(root, rel));
    if (st.isDirectory()) out.push(...sourceFiles(root, rel));
    else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.push(rel);
  }
  return out;
}

/** Relative `.ts` specifiers resolved to repository-relative files; package and data imports are ignored. */
export function importsOf(root: string, file: string): string[] {
  const text = readFileSync(path.join(root, file), "utf8");
  const info = ts.preProcessFile(text, true, true);
  const out: string[] = [];
  for (const imp of info.importedFiles) {
    // Packages, and data files such as package.json, are not layers.
    if (!imp.fileName.startsWith(".") || !/\.tsx?$/.test(imp.fileName)) continue;
    out.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), imp.fileName)));
  }
  return out;
}

function readDeps(root: string, folder: string): Set<string> | null {
  const file = path.join(root, folder, "DEPS.txt");
  if (!existsSync(file)) return null;
  const allowed = new Set<string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const entry = line.replace(/#.*/, "").trim();
    if (entry) allowed.add(entry.replace(/\/$/, ""));
  }
  return allowed;
}

/** Strongly connected components of size > 1 (and self-loops): Tarjan's algorithm. */
export function findCycles(edges: readonly ImportEdge[]): string[][] {
  const graph = new Map<string, string[]>();
  for (const e of edges) {
    if (!graph.has(e.from)) graph.set(e.from, []);
    if (!graph.has(e.to)) graph.set(e.to, []);
    graph.get(e.from)!.push(e.to);
  }
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)!.includes(v)) cycles.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

/**
 * Checks every `.ts` file under `dirs` (repository-relative, e.g. "runner",
 * "preset") of the repository at `root`.
 */
export function checkLayers(root: string, dirs: readonly string[]): LayerReport {
  const files = dirs.flatMap((d) => sourceFiles(root, d));
  const known = new Set(files);
  const edges: ImportEdge[] = [];
  const violations: string[] = [];
  const depsCache = new Map<string, Set<string> | null>();
  for (const file of files) {
    const folder = path.posix.dirname(file);
    if (!depsCache.has(folder)) depsCache.set(folder, readDeps(root, folder));
    const allowed = depsCache.get(folder)!;
    for (const target of importsOf(root, file)) {
      if (!known.has(target)) {
        // Imports leaving the checked tree (e.g. into test/) are violations too.
        violations.push(`${file} imports ${target}, outside ${dirs.join(", ")}`);
        continue;
      }
      edges.push({ from: file, to: target });
      const targetFolder = path.posix.dirname(target);
      if (targetFolder === folder) continue;
      if (allowed === null) violations.push(`${folder} has no DEPS.txt (needed for ${file} -> ${target})`);
      else if (!allowed.has(targetFolder))
        violations.push(`${file} imports ${target}: ${folder}/DEPS.txt does not allow ${targetFolder}`);
    }
  }
  return { violations: [...new Set(violations)], cycles: findCycles(edges), files };
}

/**
 * Lines of code of a TypeScript source: lines holding at least one token
 * that is neither a comment nor white space (a string or template literal
 * spanning lines counts each of them). Tokens are the leaves of
 * TypeScript's own syntax tree, so a `//` inside a string is not a comment.
 */
export function codeLines(file: string, text: string): number {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = new Set<number>();
  const visit = (node: ts.Node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(source);
    if (children.length === 0 && node.kind !== ts.SyntaxKind.EndOfFileToken) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      for (let line = start; line <= end; line++) lines.add(line);
    }
    for (const child of children) visit(child);
  };
  visit(source);
  return lines.size;
}

/** One function or method body and its size, for the function-size rule. */
export interface FunctionSize {
  /** Its name, or "(anonymous)". */
  name: string;
  /** 1-based line where its body starts. */
  line: number;
  /** Lines of code of its body ({@link codeLines}); nested functions count toward it too. */
  codeLines: number;
}

/** Every function, method, accessor and arrow function with a body in a TypeScript source. */
export function functionSizes(file: string, text: string): FunctionSize[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = text.split("\n");
  const out: FunctionSize[] = [];
  const visit = (node: ts.Node) => {
    const body = ts.isFunctionLike(node) ? (node as ts.FunctionLikeDeclaration).body : undefined;
    if (body !== undefined) {
      const start = source.getLineAndCharacterOfPosition(body.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(body.getEnd()).line;
      const named = (node as ts.FunctionLikeDeclaration).name;
      out.push({
        name: named ? named.getText(source) : "(anonymous)",
        line: start + 1,
        codeLines: codeLines(file, lines.slice(start, end + 1).join("\n")),
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}
