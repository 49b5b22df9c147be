/**
 * Random hex and SHA-256 digests without `node:crypto`: importing that
 * module costs a run ~6-7 ms of start-up (wall and CPU, measured in
 * bench/README.md) before the first shard can spawn, while the Web Crypto
 * global and Bun's native hasher are already loaded.
 */

/** `bytes` random bytes (Web Crypto's CSPRNG) as 2 × `bytes` lowercase hex digits. */
export function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/** SHA-256 of `text` (UTF-8) as 64 lowercase hex digits; the same as `createHash("sha256").update(text).digest("hex")`. */
export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
