/**
 * No stale reports (docs/reports.md, "A refused run"): a run refused with
 * exit 2 after its settings were valid removes the earlier run's reports at
 * the stable paths, so CI cannot upload and publish them as this run's. A
 * usage error before any setting is valid leaves every file alone.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  CLI,
  fixtureFiles,
  makeSuite,
  readReport,
  removeSuites,
  REPO,
  runCli,
  withoutCiVariables,
} from "./helpers/cli.ts";

afterAll(removeSuites);

const STABLE = ["junit.xml", "report.json", "ctrf.json", "report.html"];

describe("a refused run after an earlier one", () => {
  let dir: string;
  let out: string;
  let firstRunDir: string;

  beforeEach(async () => {
    dir = makeSuite({
      ...fixtureFiles("pass"),
      "bunfig.toml": [
        "[shardguard.presets.checked]",
        'globs = ["*.test.ts"]',
        "[shardguard.presets.checked.preflight]",
        'command = ["sh", "-c", "echo no credentials >&2; exit 3"]',
        "",
      ].join("\n"),
    });
    out = path.join(dir, ".shardguard");
    const first = await runCli(["run", "--root", dir]);
    expect(first.code).toBe(0);
    for (const f of STABLE) expect(existsSync(path.join(out, f))).toBe(true);
    firstRunDir = path.join(out, "runs", readdirSync(path.join(out, "runs"))[0]!);
  }, 30_000);

  const stableLeft = () => STABLE.filter((f) => existsSync(path.join(out, f)));

  test("no test file matched: the stable reports are removed, the earlier run's own copies stay", async () => {
    const r = await runCli(["run", "--root", dir, "nosuch.test.ts"]);
    expect(r.code).toBe(2);
    expect(stableLeft()).toEqual([]);
    for (const f of STABLE) expect(existsSync(path.join(firstRunDir, f))).toBe(true);
  });

  test(
    "a failing preset preflight command (run --preset): " + "removed, and a GitHub annotation and summary say why",
    async () => {
      const summary = path.join(dir, "summary.md");
      const r = await runCli(["run", "--root", dir, "--preset", "checked"], {
        env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary, GITHUB_WORKSPACE: dir },
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("exited 3; no shard started");
      expect(stableLeft()).toEqual([]);
      expect(r.stdout).toMatch(
        /^::error title=shardguard refused the run \(exit 2\)::preflight .*exited 3; no shard started/m,
      );
      expect(readFileSync(summary, "utf8")).toContain("## shardguard: refused the run (exit 2)");
    },
  );

  test("a usage error before any setting is valid leaves the files alone", async () => {
    for (const argv of [
      ["run", "--root", dir, "--jobs", "0"],
      ["run", "--root", dir, "--no-such-flag"],
    ]) {
      const r = await runCli(argv);
      expect(r.code).toBe(2);
      expect(stableLeft()).toEqual(STABLE);
    }
  });

  test("a refused report path that is not a shardguard report is never deleted", async () => {
    const testFile = path.join(dir, "pass.test.ts");
    const before = readFileSync(testFile, "utf8");
    const r = await runCli(["run", "--root", dir, "--junit", testFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("it is one of the planned test files");
    expect(readFileSync(testFile, "utf8")).toBe(before);
    // This run's other three stable paths held the earlier run's reports: gone.
    // OUT/junit.xml is not one of this run's paths (--junit moved it): left alone.
    expect(stableLeft()).toEqual(["junit.xml"]);
  });

  test("a file at a report path that only looks like JSON is kept", async () => {
    const json = path.join(out, "report.json");
    writeFileSync(json, '{"tool": {"name": "other"}}\n');
    const r = await runCli(["run", "--root", dir, "nosuch.test.ts"]);
    expect(r.code).toBe(2);
    expect(readFileSync(json, "utf8")).toBe('{"tool": {"name": "other"}}\n');
    expect(existsSync(path.join(out, "junit.xml"))).toBe(false);
  });
});

/** True where this user may mount a tmpfs in a mount namespace of its own (as test/shard-log.test.ts). */
const canMountTmpfs =
  spawnSync("unshare", ["-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /tmp"], { timeout: 5_000 }).status === 0;
if (!canMountTmpfs)
  console.warn(
    "stale-reports.test.ts: skipping the full-disk case: `unshare -rm` + `mount -t tmpfs` is not permitted here",
  );

describe("a run that cannot write its reports (a full disk) after a passing one", () => {
  test.skipIf(!canMountTmpfs)(
    "leaves no earlier report at the stable paths, names none, and --last-failed then refuses (exit 2) naming that run",
    () => {
      const dir = makeSuite({
        "a.test.ts":
          'import { expect, test } from "bun:test";\ntest("a", () => { expect(process.env.SG_B === ' +
          '"1").toBe(false); });\n',
      });
      const host = makeSuite({}, "sg-enospc-host-");
      const out = path.join(dir, "out");
      const cli = `"${process.execPath}" "${CLI}"`;
      // Everything on the small tmpfs happens inside one mount namespace; what
      // the assertions need is copied to `host` before it ends.
      const script = [
        "set -u",
        `mkdir -p "${out}" && mount -t tmpfs -o size=1m tmpfs "${out}" || exit 90`,
        `${cli} run --root "${dir}" --out "${out}" > "${host}/a.out" 2>&1; echo $? > "${host}/a.code"`,
        `cp "${out}/report.json" "${host}/a.report.json"`,
        // The disk fills up; run B's test fails.
        `dd if=/dev/zero of="${out}/filler" bs=4k 2>/dev/null; df -k "${out}" > "${host}/df"`,
        `SG_B=1 ${cli} run --root "${dir}" --out "${out}" > "${host}/b.out" 2>&1; echo $? > "${host}/b.code"`,
        `ls -a "${out}" > "${host}/b.ls"; ls "${out}/runs" > "${host}/b.runs"`,
        `${cli} run --root "${dir}" --out "${out}" --last-failed > "${host}/c.out" 2>&1; echo $? > "${host}/c.code"`,
        `rm -f "${out}/filler"`,
        `${cli} run --root "${dir}" --out "${out}" --last-failed > "${host}/d.out" 2>&1; echo $? > "${host}/d.code"`,
      ].join("\n");
      const run = spawnSync("unshare", ["-rm", "sh", "-c", script], {
        cwd: REPO,
        env: { ...withoutCiVariables(process.env), NO_COLOR: "1" },
        encoding: "utf8",
        timeout: 90_000,
      });
      expect(run.status).toBe(0);
      const read = (name: string) => readFileSync(path.join(host, name), "utf8");
      expect(read("a.code").trim()).toBe("0");
      const runA = JSON.parse(read("a.report.json")).runId as string;

      const b = read("b.out");
      expect(read("b.code").trim()).toBe("1");
      expect(b).toContain("could not write the reports: ENOSPC");
      // Run A's stable reports were removed before run B's first spawn, so none is left to remove at the end.
      expect(b).not.toContain("removed the older reports");
      // Names no report file: the stable paths held run A's.
      expect(b).not.toMatch(/^shardguard: (JUnit|JSON|CTRF|HTML) /m);
      expect(b).toContain("no report was written for this run");
      const left = read("b.ls").split("\n");
      for (const f of STABLE) expect(left).not.toContain(f);
      const runB = read("b.runs")
        .split("\n")
        .find((id) => id !== "" && id !== runA)!;
      expect(runB).toBeDefined();

      // --last-failed never reruns less because the newest run left no report.
      for (const step of ["c", "d"]) {
        expect(read(`${step}.code`).trim()).toBe("2");
        expect(read(`${step}.out`)).toContain(`--last-failed: run ${runB} left no report`);
        expect(read(`${step}.out`)).not.toContain(`every planned file passed in run ${runA}`);
      }
    },
    120_000,
  );
});

describe("a run whose stable report.json became a directory mid-run", () => {
  test("names its own complete runs/<id>/report.json instead of saying no report was written", async () => {
    const dir = makeSuite({
      "a.test.ts": [
        'import { mkdirSync, rmSync } from "node:fs";',
        'import { test } from "bun:test";',
        'test("a", () => {',
        '  rmSync(".shardguard/report.json", { force: true });',
        '  mkdirSync(".shardguard/report.json");',
        "});",
        "",
      ].join("\n"),
    });
    const r = await runCli(["run", "--root", dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("could not write the reports: EISDIR");
    expect(r.stdout).not.toContain("no report was written for this run");
    const named = new RegExp(
      String.raw`^shardguard: no report of this run at the report paths \(see the write error above\); ` +
        "its complete JSON report: (.+)$",
      "m",
    );
    const m = named.exec(r.stdout);
    expect(m).not.toBeNull();
    const own = readReport(dir, m![1]!);
    expect(m![1]).toBe(path.join(dir, ".shardguard", "runs", own.runId, "report.json"));
    expect(own.completed).toBe(true);
    expect(own.shards[0]!.status).toBe("passed");
  }, 30_000);
});

describe("recognizing a report past 64 KiB by its head", () => {
  test("our report.json and ctrf.json padded past 64 KiB are ours; another tool's large JSON is not", async () => {
    const dir = makeSuite(fixtureFiles("pass"));
    expect((await runCli(["run", "--root", dir])).code).toBe(0);
    const { holdsOurReport } = await import("../runner/engine/refused.ts");
    const pad = " ".repeat(70 * 1024);
    for (const [name, kind] of [
      ["report.json", "json"],
      ["ctrf.json", "ctrf"],
    ] as const) {
      const big = path.join(dir, `big-${name}`);
      writeFileSync(big, readFileSync(path.join(dir, ".shardguard", name), "utf8") + pad);
      expect(holdsOurReport(big, kind)).toBe(true);
    }
    const theirs = path.join(dir, "theirs.json");
    writeFileSync(theirs, `{"tool": {"name": "other"}, "runId": "x", "data": "${"x".repeat(70 * 1024)}"}`);
    expect(holdsOurReport(theirs, "json")).toBe(false);
    expect(holdsOurReport(theirs, "ctrf")).toBe(false);
  }, 30_000);
});
