/**
 * A request's fingerprint: SHA-256 over a canonical JSON text of its input. Two inputs that a client would call
 * "the same request" hash alike (object key order never matters); two that differ in any value, or in a value's
 * type, never do. Values JSON cannot carry are written with a `~` tag that no JSON text can contain, so a `Date`
 * and its ISO string, or `1n` and `1`, stay distinct:
 *
 * - `undefined` as an object property is dropped, as JSON and every tRPC transformer drop it;
 *   anywhere else (top-level input, array slot) it is `~u`;
 * - `Date` is `~d` + its ISO string (an invalid date is `~d` + `null`); `BigInt` is `~n` + decimal digits;
 * - `NaN`, `Infinity` and `-Infinity` are `~NaN`, `~Inf`, `~-Inf`; `-0` is `0`;
 * - `Map` is `~m` + its entries sorted by their canonical key; `Set` is `~s` + its members sorted;
 * - functions, symbols and cycles throw a `TypeError`: such an input cannot be compared, so it is not protected.
 *
 * Synchronous and free of platform APIs, so it runs unchanged in Node, browsers and edge runtimes.
 */
import { sha256Hex } from "./sha256.js";

/** The canonical text that {@link fingerprint} hashes. Exposed for debugging and for stores that log it. */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

/** SHA-256 of {@link canonicalJson}, as lowercase hex (64 characters). */
export function fingerprint(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

function write(value: unknown, seen: Set<object>): string {
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
      return value === null ? "null" : writeObject(value, seen);
    default:
      throw new TypeError(`Cannot fingerprint a value of type ${typeof value}.`);
  }
}

function writeObject(value: object, seen: Set<object>): string {
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? "~dnull" : `~d${JSON.stringify(value.toISOString())}`;
  }
  if (seen.has(value)) throw new TypeError("Cannot fingerprint a value that contains itself.");
  seen.add(value);
  let text: string;
  if (Array.isArray(value)) {
    text = `[${value.map((item) => write(item, seen)).join(",")}]`;
  } else if (value instanceof Map) {
    const entries = [...value].map(([k, v]) => `[${write(k, seen)},${write(v, seen)}]`);
    text = `~m[${entries.sort().join(",")}]`;
  } else if (value instanceof Set) {
    text = `~s[${[...value]
      .map((item) => write(item, seen))
      .sort()
      .join(",")}]`;
  } else {
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    for (const name of Object.keys(record).sort()) {
      const member = record[name];
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${write(member, seen)}`);
    }
    text = `{${members.join(",")}}`;
  }
  seen.delete(value);
  return text;
}
