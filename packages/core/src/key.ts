/**
 * The `Idempotency-Key` header as the IETF draft (draft-ietf-httpapi-idempotency-key-header) defines it: an
 * RFC 8941 structured-field string. Clients send it bare (`abc`) or quoted (`"abc"`); both mean the same key.
 * Anything else is refused before a store is touched, so a bad key can never claim a record.
 */
import { IdempotencyError, IdempotencyErrorCode } from "./errors.js";
import { sha256Hex } from "./sha256.js";
import type { RecordId } from "./store.js";

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
 * The stable key of a protected call's downstream call `name` (a payment provider's, another service's): the same
 * on every retry of the call, so that the downstream call is idempotent too. Every adapter's `subKey`.
 */
export function downstreamKey(id: RecordId, name: string): string {
  return sha256Hex(JSON.stringify([id.scope, id.path, id.key, name])).slice(0, 40);
}
