// Without node:crypto, whose import delays a run's first spawn; Web Crypto and Bun's hasher are loaded already.

/** `bytes` random bytes (Web Crypto's CSPRNG) as 2 × `bytes` lowercase hex digits. */
export function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/** SHA-256 of `text` (UTF-8) as lowercase hex, as node:crypto's `createHash` gives it. */
export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
