/**
 * The `Idempotency-Key` header as the IETF draft (draft-ietf-httpapi-idempotency-key-header) defines it: an
 * RFC 8941 structured-field string. Clients send it bare (`abc`) or quoted (`"abc"`); both mean the same key.
 * Anything else is refused before a store is touched, so a bad key can never claim a record.
 */
import { IdempotencyError, IdempotencyErrorCode } from "./errors.js";
import { sha256Hex } from "./sha256.js";
import type { RecordId } from "./store.js";

/** A fresh key for one user action: a random UUID v4, never a counter or a timestamp, which collide. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/** The header name, in the casing the draft uses. HTTP header names are case-insensitive. */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Set to `true` on a response that was replayed from the store instead of executed. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";
/** Longest key accepted, in characters. Long enough for a UUID with a prefix, short enough to index. */
export const MAX_KEY_LENGTH = 255;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * Turns the raw header value into the key, or throws a KEY_MISSING / KEY_INVALID {@link IdempotencyError}.
 * `what` names the protected operation so the message tells the client where the key was expected.
 */
export function parseIdempotencyKey(header: string | null | undefined, what = "this operation"): string {
  if (header === null || header === undefined) {
    throw new IdempotencyError(
      IdempotencyErrorCode.KEY_MISSING,
      `The ${IDEMPOTENCY_KEY_HEADER} header is required for ${what}.`,
    );
  }
  // HTTP strips spaces and tabs around a field value; anything else (a non-breaking space) is part of the key,
  // and so refused below rather than silently trimmed into a valid one.
  const key = unquote(header.replace(/^[ \t]+|[ \t]+$/g, ""));
  if (key === undefined || key.length === 0 || key.length > MAX_KEY_LENGTH || !VISIBLE_ASCII.test(key)) {
    throw new IdempotencyError(
      IdempotencyErrorCode.KEY_INVALID,
      `The ${IDEMPOTENCY_KEY_HEADER} header for ${what} must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters.`,
    );
  }
  return key;
}

/** Strips structured-field string quotes (`"a\"b"` is `a"b`); undefined for an unterminated quote. */
function unquote(value: string): string | undefined {
  if (!value.startsWith('"')) return value;
  if (value.length < 2 || !value.endsWith('"')) return undefined;
  let out = "";
  for (let i = 1; i < value.length - 1; i++) {
    let char = value[i];
    if (char === "\\") {
      char = value[++i];
      if (i === value.length - 1 || (char !== '"' && char !== "\\")) return undefined;
    } else if (char === '"') {
      return undefined;
    }
    out += char;
  }
  return out;
}

/**
 * The most UTF-8 bytes of a record's scope, and of its path. A store indexes a record by scope, path and key
 * together, and PostgreSQL refuses a B-tree entry past about 2.7 kB (54000, on every call that carries it): with a
 * key of at most 255 bytes, two parts of this size stay under it.
 */
export const MAX_IDENTITY_PART_BYTES = 1_024;

/** Half of a UTF-16 surrogate pair standing alone: not Unicode text, and stored as U+FFFD by PostgreSQL's drivers. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Why `text` cannot be kept as it is by every store, or undefined when it can: PostgreSQL's text holds neither
 * U+0000 nor a lone surrogate (its drivers send one as U+FFFD, so two texts become one).
 */
export function unkeptTextReason(text: string): string | undefined {
  if (LONE_SURROGATE.test(text)) return "holds a lone UTF-16 surrogate, which is not Unicode text";
  if (text.includes("\u0000")) return "holds U+0000, which no store keeps in text";
  return undefined;
}

/**
 * Throws a `TypeError` unless `id`'s scope and path can be stored as they are, by every store: well-formed Unicode
 * with no U+0000, each at most {@link MAX_IDENTITY_PART_BYTES} in UTF-8. They come from the app (its scope
 * function, its procedure or route names), so one that cannot be stored is a server error, said at once: never a
 * retryable store failure on every call, and never two scopes that one store would keep as one (`"a\ud800"` and
 * `"a\udfff"` both become `"a\ufffd"` on the way to PostgreSQL).
 */
export function checkIdentity({ scope, path }: RecordId): void {
  for (const [name, part] of [
    ["scope", scope],
    ["path", path],
  ] as const) {
    let problem = unkeptTextReason(part);
    if (!problem && part.length * 3 > MAX_IDENTITY_PART_BYTES && utf8Length(part) > MAX_IDENTITY_PART_BYTES) {
      problem = `is longer than ${MAX_IDENTITY_PART_BYTES} bytes in UTF-8`;
    }
    if (problem) throw new TypeError(`idemkit: a call's ${name} ${problem}, so its record could not be stored.`);
  }
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}

/**
 * The stable key of a protected call's downstream call `name` (a payment provider's, another service's): the same
 * on every retry of the call, so that the downstream call is idempotent too. Every adapter's `subKey`.
 */
export function downstreamKey(id: RecordId, name: string): string {
  return sha256Hex(JSON.stringify([id.scope, id.path, id.key, name])).slice(0, 40);
}
