/**
 * Where a run's inspector sockets live: a directory of mode 0700 we own (checked with lstat), paths short and safe
 * enough, else a private temp directory (docs/architecture.md, "Event channel").
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** Longest unix socket path the kernel accepts, bytes without the NUL: `sizeof(sun_path) - 1` (Linux; macOS, BSDs). */
export const MAX_SOCKET_PATH_BYTES = process.platform === "linux" ? 107 : 103;

/** The longest socket file name {@link socketPathFor} is expected to produce ("99999.sock"). */
const SOCKET_NAME_RESERVE = "99999.sock".length;

/** Characters a socket path may contain, kept conservative: a path outside only moves sockets to a temp directory. */
export const SAFE_SOCKET_PATH = /^[A-Za-z0-9._/-]+$/;

/** Thrown when a socket path would exceed {@link MAX_SOCKET_PATH_BYTES}. */
export class SocketPathTooLongError extends Error {
  override readonly name = "SocketPathTooLongError";
  constructor(
    readonly socketPath: string,
    readonly bytes: number,
  ) {
    super(
      `unix socket path is ${bytes} bytes, over the ${MAX_SOCKET_PATH_BYTES}-byte limit of ${process.platform}: ` +
        `${socketPath}`,
    );
  }
}

function byteLength(path: string): number {
  return Buffer.byteLength(path, "utf8");
}

/**
 * Creates (or re-uses) a run's private socket directory and returns its absolute path: `<runDir>/sock` when its
 * socket paths fit and are safe, else a fresh `sg-XXXXXX` under `os.tmpdir()` that the caller removes. Mode 0700
 * and ours, checked with `lstat`: a child's inspector can evaluate code.
 * @throws Error when it is a symlink, not a directory, someone else's, or cannot be made 0700
 * @throws SocketPathTooLongError or Error when even the tmpdir fallback is too long or unsafe
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
      `unix socket path ${JSON.stringify(path)} contains characters outside the safe set for inspector sockets (only ` +
        `A-Z a-z 0-9 . _ / - are accepted)`,
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
 * `<dir>/<name>.sock`, ready to listen on (inspector.ts): a stale socket file there is removed (binding fails with
 * EADDRINUSE on it), and a directory a test removed is made again and checked like {@link socketDirFor}.
 * @throws SocketPathTooLongError over {@link MAX_SOCKET_PATH_BYTES}; Error when `name` is not a plain file name,
 *   the path is unsafe, a non-socket exists there, or the directory is not private
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
  // A test may remove the directory (it is in its own argv): made again, private, so later shards keep events.
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
