/**
 * Where the inspector sockets of a run live, and the security policy for
 * that place: a directory of mode 0700 owned by us (checked with lstat, never
 * followed through a symlink), paths within the kernel's unix socket length
 * limit and of safe characters, else a private temporary directory.
 * docs/architecture.md, "Event channel".
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/**
 * Longest unix socket path the kernel accepts, in bytes, excluding the
 * terminating NUL: `sizeof(sockaddr_un.sun_path) - 1`, which is 108 - 1 on
 * Linux and 104 - 1 on macOS and the BSDs.
 */
export const MAX_SOCKET_PATH_BYTES = process.platform === "linux" ? 107 : 103;

/** The longest socket file name {@link socketPathFor} is expected to produce ("99999.sock"). */
const SOCKET_NAME_RESERVE = "99999.sock".length;

/**
 * Characters a socket path may contain. Measured on Bun 1.4.4 with the
 * WebSocket channel this replaced: a space made the child fail with "Failed
 * to start inspector" (URL parsing of `ws+unix://`), and a `:` made the
 * `ws` client cut the path. The reverse connect's `--inspect-wait=unix:<path>`
 * (and `BUN_INSPECT_CONNECT_TO=unix://<path>`, what the runner uses now)
 * takes the rest of the argument as a plain path (a space and a colon
 * worked, measured), but the set stays conservative: a run directory
 * outside it only moves the sockets to the private temp directory.
 */
export const SAFE_SOCKET_PATH = /^[A-Za-z0-9._/-]+$/;

/** Thrown when a socket path would exceed {@link MAX_SOCKET_PATH_BYTES}. */
export class SocketPathTooLongError extends Error {
  override readonly name = "SocketPathTooLongError";
  constructor(
    readonly socketPath: string,
    readonly bytes: number,
  ) {
    super(
      `unix socket path is ${bytes} bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of ${process.platform}: ${socketPath}`,
    );
  }
}

function byteLength(path: string): number {
  return Buffer.byteLength(path, "utf8");
}

/**
 * Creates (or re-uses) a private directory for the inspector sockets of a
 * run and returns its absolute path.
 *
 * The directory is `<runDir>/sock` (absolute) when socket paths inside it
 * stay under {@link MAX_SOCKET_PATH_BYTES} and use only safe characters;
 * otherwise (deep run directories, spaces or colons in the path) a fresh
 * `sg-XXXXXX` directory under `os.tmpdir()`, which the caller removes at the
 * end of the run (it is not under `runDir`). Either way the directory has
 * mode 0700 and belongs to the current user, checked with `lstat` after
 * creation, so no other local user can connect to a child's inspector
 * (which can evaluate code in the child).
 *
 * @throws Error when the directory exists but is a symlink, not a directory,
 *   owned by someone else, or its mode cannot be made 0700.
 * @throws SocketPathTooLongError when even the tmpdir fallback is too long.
 * @throws Error when the tmpdir fallback contains unsafe characters.
 */
export function socketDirFor(runDir: string): string {
  const preferred = join(resolve(runDir), "sock");
  if (SAFE_SOCKET_PATH.test(preferred) && byteLength(preferred) + 1 + SOCKET_NAME_RESERVE <= MAX_SOCKET_PATH_BYTES) {
    mkdirSync(runDir, { recursive: true });
    try {
      mkdirSync(preferred, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    return assertPrivateDir(preferred);
  }
  const fallback = mkdtempSync(join(resolve(tmpdir()), "sg-"));
  const probe = join(fallback, "x".repeat(SOCKET_NAME_RESERVE));
  try {
    if (byteLength(probe) > MAX_SOCKET_PATH_BYTES) throw new SocketPathTooLongError(probe, byteLength(probe));
    assertSafeCharacters(fallback);
    return assertPrivateDir(fallback);
  } catch (error) {
    rmSync(fallback, { recursive: true, force: true });
    throw error;
  }
}

function assertSafeCharacters(path: string): void {
  if (!SAFE_SOCKET_PATH.test(path)) {
    throw new Error(
      `unix socket path ${JSON.stringify(path)} contains characters outside the safe set for inspector sockets (only A-Z a-z 0-9 . _ / - are accepted)`,
    );
  }
}

function assertPrivateDir(dir: string): string {
  let stat = lstatSync(dir);
  if (!stat.isDirectory()) throw new Error(`socket directory ${dir} is not a directory (or is a symlink)`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new Error(`socket directory ${dir} belongs to uid ${stat.uid}, not to the current user (uid ${uid})`);
  }
  if ((stat.mode & 0o777) !== 0o700) {
    chmodSync(dir, 0o700);
    stat = lstatSync(dir);
    if ((stat.mode & 0o777) !== 0o700) {
      throw new Error(`socket directory ${dir} has mode ${(stat.mode & 0o777).toString(8)}, expected 700`);
    }
  }
  return dir;
}

/**
 * Returns `<dir>/<name>.sock`, ready for the runner to listen on
 * (events/inspector.ts) and for the child's `BUN_INSPECT_CONNECT_TO=unix://<path>`.
 *
 * A socket file left at that path by an earlier run is removed: binding a
 * unix socket fails with EADDRINUSE on an existing file (measured with
 * Bun 1.4.4, both for `Bun.listen` and for the child's own inspector). A
 * directory removed meanwhile (by a test) is made again and checked as
 * {@link socketDirFor} does.
 *
 * @param name a short file-name-safe token such as the shard index.
 * @throws SocketPathTooLongError when the path exceeds {@link MAX_SOCKET_PATH_BYTES}.
 * @throws Error when `name` is not a plain file name, the path has
 *   characters outside `A-Z a-z 0-9 . _ / -`, something other than a
 *   socket already exists at the path, or the directory is not private.
 */
export function socketPathFor(dir: string, name: string | number): string {
  const token = String(name);
  if (!/^[A-Za-z0-9._-]+$/.test(token) || token === "." || token === "..") {
    throw new Error(`socket name must be a plain file name, got ${JSON.stringify(token)}`);
  }
  const path = join(resolve(dir), `${token}.sock`);
  const bytes = byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES) throw new SocketPathTooLongError(path, bytes);
  assertSafeCharacters(path);
  // A test may have removed the directory (it is in the test's own argv):
  // made again, private, so later shards keep their events.
  try {
    lstatSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    mkdirSync(dir, { mode: 0o700, recursive: true });
  }
  assertPrivateDir(dir);
  let existing: ReturnType<typeof lstatSync>;
  try {
    existing = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return path;
    throw error;
  }
  if (!existing.isSocket()) throw new Error(`refusing to replace ${path}: it exists and is not a socket`);
  unlinkSync(path);
  return path;
}
