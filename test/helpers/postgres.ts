/**
 * A throwaway PostgreSQL server for the history tests: Debian's postgresql package (initdb, pg_ctl) in a temp dir,
 * on a unix socket only, run as the `postgres` OS user when the tests run as root (initdb refuses root).
 */
import { spawnSync } from "node:child_process";
import { chownSync, existsSync, readdirSync, rmSync } from "node:fs";
import { ownedTempDir } from "./cli.ts";
import path from "node:path";

/** A running server, or why there is none. */
export type Postgres = { url: string; stop: () => void } | { skip: string };

/** The newest Debian PostgreSQL bin dir, or null. */
function binDir(): string | null {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(path.join(base, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(base, versions[0], "bin") : null;
}

/** Runs `args` as the postgres OS user when we are root; the error text on failure. */
function runAs(asPostgres: boolean, args: string[]): string | null {
  const [cmd, ...rest] = asPostgres ? ["runuser", "-u", "postgres", "--", ...args] : args;
  const r = spawnSync(cmd!, rest, { encoding: "utf8", timeout: 60_000 });
  return r.status === 0 ? null : `${args[0]} failed: ${(r.stderr || r.stdout || String(r.error)).trim()}`;
}

/** Starts a server with a database user `sg` on a fresh cluster; `stop` ends it and removes the dir. */
export function startPostgres(): Postgres {
  const bin = binDir();
  if (bin === null) return { skip: "no PostgreSQL server installed (apt-get install postgresql)" };
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres && spawnSync("id", ["postgres"]).status !== 0)
    return { skip: "running as root and there is no postgres OS user to run the server as" };
  const dir = ownedTempDir("sg-pg-");
  const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim());
  if (asPostgres) chownSync(dir, uid, Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout));
  const data = path.join(dir, "data");
  const port = 20_000 + Math.floor(Math.random() * 30_000);
  const failed =
    runAs(asPostgres, [path.join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "sg", "--no-sync"]) ??
    runAs(asPostgres, [
      path.join(bin, "pg_ctl"),
      "-D",
      data,
      "-l",
      path.join(dir, "log"),
      "-w",
      "-o",
      `-k ${dir} -p ${port} -c listen_addresses='' -c fsync=off`,
      "start",
    ]);
  const stop = () => {
    runAs(asPostgres, [path.join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]);
    rmSync(dir, { recursive: true, force: true });
  };
  if (failed !== null) {
    stop();
    return { skip: failed };
  }
  return { url: `postgres://sg@localhost:${port}/postgres?host=${dir}`, stop };
}
