#!/usr/bin/env bun
/**
 * What attaching Bun's inspector changes for the code under test, per way of
 * attaching it (docs/bun-behaviour.md, "What the inspector changes").
 *
 * Runs one probe test file three ways with the Bun given and prints every
 * observation that differs from plain `bun test`, then the median wall time
 * of a trivial one-test file each way:
 *   plain    `bun test FILE`
 *   flag     `bun --inspect-wait=unix:<sock> test FILE` (shardguard before it used the variable)
 *   connect  `BUN_INSPECT_CONNECT_TO=unix://<sock> bun test FILE` (shardguard's children)
 * A listener on `<sock>` answers like the runner (the two enables and
 * `Inspector.initialized`), so both inspector ways connect.
 *
 * Usage: bun bench/inspector-modes.ts [--bun PATH] [--runs 15]
 * Linux or macOS (unix sockets). Exits 1 when the connect way differs from
 * plain in anything but its own variable.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const argAt = (name: string) => process.argv[process.argv.indexOf(`--${name}`) + 1];
const BUN = process.argv.includes("--bun") ? argAt("bun")! : process.execPath;
const RUNS = process.argv.includes("--runs") ? Number(argAt("runs")) : 15;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error("--runs needs a positive integer");

const dir = mkdtempSync(path.join(os.tmpdir(), "sg-bench-modes-"));
const PROBE = path.join(dir, "probe.test.ts");
// Each function exercises one transformation of Bun's transpiler (inlining, folding, minified comparisons, dead code).
writeFileSync(
  PROBE,
  `import { test } from "bun:test";
const handle = (c: unknown) => c;
const alias = (context: unknown) => { const c = context; return handle(c); };
function folded() { const n = 1 + 2; return "a" + "b" + n; }
function undef(x?: number) { return x === undefined ? typeof x === "undefined" : !!x; }
function dead() { if (false) { return "never"; } return "always"; }
function dbg() { debugger; return 1; }
class K { m(a: number, b = 2) { return a + b; } }
const TOP = 3;
function top() { return TOP; }
test("observe", async () => {
  const fns: Record<string, Function> = { alias, folded, undef, dead, dbg, K, top };
  const frame = (s: string | undefined, n: number) => String(s).split("\\n").slice(1, 1 + n).map((l) => l.trim().replace(/\\(.*\\//, "("));
  async function inner() { await Bun.sleep(1); throw new Error("deep"); }
  let asyncStack: string[] = [];
  try { await inner(); } catch (e) { asyncStack = frame((e as Error).stack, 2); }
  console.log("OBS=" + JSON.stringify({
    source: Object.fromEntries(Object.entries(fns).map(([k, f]) => [k, f.toString()])),
    nameLength: Object.fromEntries(Object.entries(fns).map(([k, f]) => [k, [f.name, f.length]])),
    stack: frame(new Error("x").stack, 1),
    asyncStack,
    execArgv: process.execArgv.map((a) => a.replace(/unix:.*/, "unix:…")),
    inspectorEnv: Object.keys(process.env).filter((k) => k.includes("INSPECT")),
    bunInspect: Bun.inspect(alias),
  }));
});
`,
);
const TRIVIAL = path.join(dir, "trivial.test.ts");
writeFileSync(TRIVIAL, `import { test } from "bun:test";\ntest("t", () => {});\n`);

const frame = (o: object) => {
  const body = Buffer.from(JSON.stringify(o));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
};
const HANDSHAKE = Buffer.concat([
  frame({ id: 1, method: "TestReporter.enable" }),
  frame({ id: 2, method: "LifecycleReporter.enable" }),
  frame({ id: 3, method: "Inspector.initialized" }),
]);

type Mode = "plain" | "flag" | "connect";
let serial = 0;
/** One `bun test FILE` the given way: its output and wall time (ms, spawn to exit). */
async function run(mode: Mode, file: string): Promise<{ out: string; ms: number }> {
  const sock = path.join(dir, `${(serial += 1)}.sock`);
  const server =
    mode === "plain" ? null : Bun.listen({ unix: sock, socket: { open: (s) => void s.write(HANDSHAKE), data() {} } });
  const env: Record<string, string | undefined> = {
    ...process.env,
    BUN_INSPECT_CONNECT_TO: mode === "connect" ? `unix://${sock}` : undefined,
  };
  const argv = mode === "flag" ? [BUN, `--inspect-wait=unix:${sock}`, "test", file] : [BUN, "test", file];
  const t0 = performance.now();
  const child = Bun.spawn(argv, { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  await child.exited;
  const ms = performance.now() - t0;
  server?.stop(true);
  rmSync(sock, { force: true });
  return { out: out + err, ms };
}

/** Observations as flat `key → JSON` pairs. */
function flatten(value: unknown, prefix = ""): Record<string, string> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { [prefix]: JSON.stringify(value) };
  return Object.assign({}, ...Object.entries(value).map(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k)));
}

const observed: Record<Mode, Record<string, string>> = { plain: {}, flag: {}, connect: {} };
for (const mode of ["plain", "flag", "connect"] as const) {
  const { out } = await run(mode, PROBE);
  const line = out.split("\n").find((l) => l.startsWith("OBS="));
  if (!line) throw new Error(`${mode}: the probe printed no observations:\n${out}`);
  observed[mode] = { ...flatten(JSON.parse(line.slice(4))), banner: JSON.stringify(out.includes("Bun Inspector")) };
}
const version = (await new Response(Bun.spawn([BUN, "--revision"]).stdout).text()).trim();
console.log(`Bun ${version}`);
let connectDiffers = false;
for (const mode of ["flag", "connect"] as const) {
  const keys = Object.keys(observed.plain).filter((k) => observed.plain[k] !== observed[mode][k]);
  console.log(`\n${mode}: ${keys.length} observation(s) differ from plain`);
  for (const k of keys)
    console.log(`  ${k}\n    plain:   ${observed.plain[k]}\n    ${mode.padEnd(8)} ${observed[mode][k]}`);
  if (mode === "connect") connectDiffers = keys.some((k) => k !== "inspectorEnv");
}
console.log(`\nwall time of a one-test file, median of ${RUNS} (ms):`);
for (const mode of ["plain", "flag", "connect"] as const) {
  const times: number[] = [];
  // Alternating would mix the modes' caches; each mode runs its spawns back to back.
  for (let i = 0; i < RUNS; i++) times.push((await run(mode, TRIVIAL)).ms);
  times.sort((a, b) => a - b);
  console.log(
    `  ${mode.padEnd(8)} ${times[Math.floor(RUNS / 2)]!.toFixed(1)} (min ${times[0]!.toFixed(1)}, max ` +
      `${times[RUNS - 1]!.toFixed(1)})`,
  );
}
rmSync(dir, { recursive: true, force: true });
process.exit(connectDiffers ? 1 : 0);
