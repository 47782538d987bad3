/**
 * SHA-256 (FIPS 180-4), synchronous and dependency-free. Web Crypto's `subtle.digest` would do, but it is
 * asynchronous: in Node every call hops to the libuv thread pool and back, which measured as a quarter of the
 * middleware's cost per request (`npm run bench`). Node's own synchronous hash is used where it exists; elsewhere
 * (browsers, edge runtimes) plain JavaScript, which for the few hundred bytes of a fingerprint beats the hop.
 */

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const encoder = new TextEncoder();
const schedule = new Uint32Array(64);

interface NodeHash {
  update(data: string | Uint8Array): NodeHash;
  digest(encoding: "hex"): string;
}
/**
 * Node's own synchronous hashing (OpenSSL), found at run time so that nothing imports `node:crypto` where it does
 * not exist. It hashes a 128-character input in about 3 µs where the portable code below takes about 11.
 */
const nodeCrypto = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => { createHash(algorithm: string): NodeHash } } }
).process?.getBuiltinModule?.("node:crypto");

/** SHA-256 of the UTF-8 encoding of `text`, as 64 lowercase hex characters. */
export function sha256Hex(text: string): string {
  if (nodeCrypto) return nodeCrypto.createHash("sha256").update(text).digest("hex");
  return portableSha256Hex(encoder.encode(text));
}

/** SHA-256 of `data`, as 64 lowercase hex characters. */
export function sha256HexOfBytes(data: Uint8Array): string {
  if (nodeCrypto) return nodeCrypto.createHash("sha256").update(data).digest("hex");
  return portableSha256Hex(data);
}

/** SHA-256 in plain JavaScript, for runtimes without `node:crypto` (browsers, edge). */
export function portableSha256Hex(data: Uint8Array): string {
  // Message, a 1 bit, zeros, then the length in bits as a 64-bit big-endian number: a multiple of 64 bytes.
  const blocks = Math.ceil((data.length + 9) / 64);
  const message = new Uint8Array(blocks * 64);
  message.set(data);
  message[data.length] = 0x80;
  const view = new DataView(message.buffer);
  view.setUint32(message.length - 8, Math.floor(data.length / 0x20000000));
  view.setUint32(message.length - 4, (data.length * 8) >>> 0);

  const hash = INITIAL.slice();
  for (let offset = 0; offset < message.length; offset += 64) {
    for (let i = 0; i < 16; i++) schedule[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i++) {
      const w15 = schedule[i - 15] as number;
      const w2 = schedule[i - 2] as number;
      const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
      const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
      schedule[i] = ((schedule[i - 16] as number) + s0 + (schedule[i - 7] as number) + s1) | 0;
    }
    let [a, b, c, d, e, f, g, h] = hash as [number, number, number, number, number, number, number, number];
    for (let i = 0; i < 64; i++) {
      const t1 =
        (h +
          (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
          ((e & f) ^ (~e & g)) +
          (K[i] as number) +
          (schedule[i] as number)) |
        0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    const next = [a, b, c, d, e, f, g, h];
    for (let i = 0; i < 8; i++) hash[i] = ((hash[i] as number) + (next[i] as number)) | 0;
  }
  let hex = "";
  for (const word of hash) hex += (word >>> 0).toString(16).padStart(8, "0");
  return hex;
}

function rotr(value: number, bits: number): number {
  return (value >>> bits) | (value << (32 - bits));
}
