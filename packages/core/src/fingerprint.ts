/**
 * A request's fingerprint: SHA-256 over a canonical text of its input. Two inputs that a client would call "the
 * same request" hash alike (object key order never matters); two that differ in any value, or in a value's type,
 * never do. Plain JSON is written as RFC 8785 (JCS) writes it, so a client in another language reproduces a
 * fingerprint with any JCS library. Values JSON cannot carry, which a JCS library refuses, are written with a `~`
 * tag that no JSON text can contain, so a `Date` and its ISO string, or `1n` and `1`, stay distinct:
 *
 * - `undefined` as an object property is dropped, as JSON and every tRPC transformer drop it;
 *   anywhere else (top-level input, array slot) it is `~u`;
 * - `Date` is `~d` + its ISO string (an invalid date is `~d` + `null`); `BigInt` is `~n` + decimal digits;
 * - `NaN`, `Infinity` and `-Infinity` are `~NaN`, `~Inf`, `~-Inf`; `-0` is `0`;
 * - `Map` is `~m` + its entries sorted by their canonical key; `Set` is `~s` + its members sorted;
 * - binary data (`ArrayBuffer`, typed arrays, `DataView`, Node's `Buffer`) is `~b` + its type + the SHA-256 of
 *   its bytes;
 * - `URL` is `~url` + its href, `URLSearchParams` `~q` + its entries in order, `RegExp` `~r` + source and flags;
 * - `FormData` is `~f` + its entries in order; a `File` is `~F` + name, type and the SHA-256 of its bytes (never
 *   `lastModified`, which a server sets anew on every upload), a `Blob` `~B` + type and the SHA-256 of its bytes.
 *   Those bytes are read (and hashed by the platform's Web Crypto) asynchronously, so inputs that carry files are
 *   fingerprinted with {@link fingerprintAsync};
 * - anything else that is not a plain object (a class instance, a stream, an `Error`, a function, a symbol) and
 *   cycles throw a `TypeError` naming the type: such an input cannot be compared by content, so it is refused
 *   rather than reduced to its enumerable keys, where two different uploads would collide.
 *
 * Platform APIs only (no `node:` imports), so it runs unchanged in Node, browsers and edge runtimes.
 */
import { sha256Hex, sha256HexOfBytes } from "./sha256.js";

/** How a `Blob` or `File` is written: from its bytes (read beforehand), or from what can be known without them. */
type BlobWriter = (blob: Blob) => string;

/** How `fingerprint` and `fingerprintAsync` read what they are given. */
export interface FingerprintOptions {
  /**
   * `"content"` (the default): a `Blob` or `File` is compared by its bytes, which only {@link fingerprintAsync}
   * can read; {@link fingerprint} then refuses one. `"metadata"`: by name, type, size and last modification,
   * without reading it, for a client telling its own user actions apart (the server still compares bytes).
   */
  blobs?: "content" | "metadata";
}

/** The canonical text that {@link fingerprint} hashes. Exposed for debugging and for stores that log it. */
export function canonicalJson(value: unknown, { blobs = "content" }: FingerprintOptions = {}): string {
  return write(value, new Set(), blobs === "metadata" ? blobMetadata : unreadBlob);
}

/**
 * SHA-256 of the value's canonical JSON (object keys sorted, so key order never matters), as lowercase hex (64
 * characters).
 */
export function fingerprint(value: unknown, options?: FingerprintOptions): string {
  return sha256Hex(canonicalJson(value, options));
}

/** Like {@link fingerprint}, reading the bytes of every `Blob` and `File` in the input first. */
export async function fingerprintAsync(value: unknown): Promise<string> {
  // Most inputs carry no file: written at once, they are never searched for one.
  let text: string | undefined;
  try {
    text = write(value, new Set(), foundBlob);
  } catch (error) {
    if (error !== FOUND_BLOB) throw error;
  }
  return text === undefined ? fingerprintWithBlobs(value) : sha256Hex(text);
}

const FOUND_BLOB = Symbol("found a blob");
const foundBlob: BlobWriter = () => {
  throw FOUND_BLOB;
};

async function fingerprintWithBlobs(value: unknown): Promise<string> {
  const digests = new Map<Blob, string>();
  await Promise.all(
    blobsIn(value, new Set()).map(async (blob) => {
      const digest = await globalThis.crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
      digests.set(blob, hex(new Uint8Array(digest)));
    }),
  );
  const writeBlob: BlobWriter = (blob) => {
    const digest = digests.get(blob);
    if (digest === undefined) throw new TypeError(`A ${typeName(blob)} was not read before fingerprinting.`);
    const content = JSON.stringify(digest);
    return isFile(blob)
      ? `~F[${JSON.stringify(blob.name)},${JSON.stringify(blob.type)},${content}]`
      : `~B[${JSON.stringify(blob.type)},${content}]`;
  };
  return sha256Hex(write(value, new Set(), writeBlob));
}

function write(value: unknown, seen: Set<object>, writeBlob: BlobWriter): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (Number.isNaN(value)) return "~NaN";
      if (value === Number.POSITIVE_INFINITY) return "~Inf";
      if (value === Number.NEGATIVE_INFINITY) return "~-Inf";
      return Object.is(value, -0) ? "0" : JSON.stringify(value);
    case "bigint":
      return `~n${value.toString()}`;
    case "undefined":
      return "~u";
    case "object":
      return value === null ? "null" : writeObject(value, seen, writeBlob);
    default:
      throw new TypeError(`Cannot fingerprint a value of type ${typeof value}.`);
  }
}

function writeObject(value: object, seen: Set<object>, writeBlob: BlobWriter): string {
  // Plain objects and arrays, what inputs are mostly made of, are never leaves: they skip the leaves' checks (but
  // binary data stays binary whatever its prototype says).
  const container = Array.isArray(value) || (isPlainObject(value) && !ArrayBuffer.isView(value));
  const leaf = container ? undefined : writeLeafObject(value, writeBlob);
  if (leaf !== undefined) return leaf;
  if (seen.has(value)) throw new TypeError("Cannot fingerprint a value that contains itself.");
  seen.add(value);
  const each = (item: unknown) => write(item, seen, writeBlob);
  let text: string;
  if (Array.isArray(value)) {
    text = `[${value.map(each).join(",")}]`;
  } else if (value instanceof Map) {
    text = `~m[${[...value]
      .map(([k, v]) => `[${each(k)},${each(v)}]`)
      .sort()
      .join(",")}]`;
  } else if (value instanceof Set) {
    text = `~s[${[...value].map(each).sort().join(",")}]`;
  } else if (isFormData(value)) {
    text = `~f[${[...value].map(([name, entry]) => `[${JSON.stringify(name)},${each(entry)}]`).join(",")}]`;
  } else if (isPlainObject(value)) {
    const members: string[] = [];
    for (const name of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[name];
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${each(member)}`);
    }
    text = `{${members.join(",")}}`;
  } else {
    throw new TypeError(
      `Cannot fingerprint a ${typeName(value)} by its content: send plain data (objects, arrays, strings, ` +
        "numbers, dates), binary data, or FormData and files.",
    );
  }
  seen.delete(value);
  return text;
}

/** Objects written whole, without looking inside for members; undefined for containers. */
function writeLeafObject(value: object, writeBlob: BlobWriter): string | undefined {
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? "~dnull" : `~d${JSON.stringify(value.toISOString())}`;
  }
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    const view = value instanceof ArrayBuffer ? new Uint8Array(value) : value;
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    return `~b${JSON.stringify(typeName(value))}${JSON.stringify(sha256HexOfBytes(bytes))}`;
  }
  if (value instanceof RegExp) return `~r${JSON.stringify(value.source)}${JSON.stringify(value.flags)}`;
  if (typeof URL !== "undefined" && value instanceof URL) return `~url${JSON.stringify(value.href)}`;
  if (typeof URLSearchParams !== "undefined" && value instanceof URLSearchParams) {
    return `~q${JSON.stringify([...value])}`;
  }
  if (isBlob(value)) return writeBlob(value);
  return undefined;
}

/** Every Blob and File reachable from `value` (the containers {@link writeObject} looks into). */
function blobsIn(value: unknown, seen: Set<object>): Blob[] {
  if (typeof value !== "object" || value === null || seen.has(value)) return [];
  if (isBlob(value)) return [value];
  seen.add(value);
  let members: Iterable<unknown> = [];
  if (Array.isArray(value)) members = value;
  else if (value instanceof Map) members = [...value].flat();
  else if (value instanceof Set) members = value;
  else if (isFormData(value)) members = [...value.values()];
  else if (isPlainObject(value)) members = Object.values(value);
  return [...members].flatMap((member) => blobsIn(member, seen));
}

const unreadBlob: BlobWriter = (blob) => {
  throw new TypeError(
    `A ${typeName(blob)}'s bytes are read asynchronously: fingerprint this input with fingerprintAsync().`,
  );
};

const blobMetadata: BlobWriter = (blob) =>
  isFile(blob)
    ? `~F${JSON.stringify([blob.name, blob.type, blob.size, blob.lastModified])}`
    : `~B${JSON.stringify([blob.type, blob.size])}`;

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function isBlob(value: object): value is Blob {
  return typeof Blob !== "undefined" && value instanceof Blob;
}

function isFile(blob: Blob): blob is File {
  return typeof File !== "undefined" && blob instanceof File;
}

function isFormData(value: object): value is FormData {
  return typeof FormData !== "undefined" && value instanceof FormData;
}

/** `Object.prototype.toString`'s name for a value: `Uint8Array`, `FormData`, a class's own tag, or `Object`. */
function typeName(value: object): string {
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  const constructorName = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return tag === "Object" && typeof constructorName === "string" && constructorName ? constructorName : tag;
}

function hex(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += byte.toString(16).padStart(2, "0");
  return text;
}
