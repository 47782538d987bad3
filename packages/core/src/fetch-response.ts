/**
 * What the Fetch adapter keeps of an answer and gives back: the headers that describe it and its body byte for byte
 * (text as text, other bytes as base64), a replay marked `Idempotent-Replayed`, and a refusal as JSON with the
 * headers that say what a client may do.
 */
import { fromBase64, toBase64 } from "./base64.js";
import type { IdempotencyError } from "./errors.js";
import { httpStatusOf, refusalHeaders } from "./http-status.js";
import { IDEMPOTENT_REPLAYED_HEADER } from "./key.js";

/** Headers that describe an answer rather than the client it was sent to: the ones a replay carries. */
const REPLAYED_HEADERS = [
  "content-type",
  "content-encoding",
  "content-language",
  "content-disposition",
  "location",
  "etag",
  "last-modified",
  "cache-control",
];

/** A stored answer: status is the record's, this is its body. Text is kept as text, other bytes as base64. */
export interface StoredFetchBody {
  headers: [string, string][];
  text?: string;
  base64?: string;
}

/**
 * What is stored of an answer (its describing headers, its body), and the answer again for its own client, whole:
 * read to be stored, it keeps all its headers, Set-Cookie included.
 */
export async function keptAnswerOf(answer: Response): Promise<{ stored: StoredFetchBody; first: Response }> {
  const headers = REPLAYED_HEADERS.flatMap((name): [string, string][] => {
    const value = answer.headers.get(name);
    return value === null ? [] : [[name, value]];
  });
  const bytes = new Uint8Array(await answer.arrayBuffer());
  const first = new Response(bodyless(answer.status) ? null : bytes, answer);
  try {
    return { stored: { headers, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) }, first };
  } catch {
    return { stored: { headers, base64: toBase64(bytes) }, first };
  }
}

/** Statuses whose answers have no body (a Response refuses one). */
function bodyless(status: number): boolean {
  return status === 204 || status === 205 || status === 304;
}

export function replayOf(status: number, stored: StoredFetchBody, replayed: boolean): Response {
  const headers = new Headers(stored.headers);
  if (replayed) headers.set(IDEMPOTENT_REPLAYED_HEADER, "true");
  const body = stored.base64 !== undefined ? fromBase64(stored.base64) : stored.text;
  return new Response(bodyless(status) ? null : body, { status, headers });
}

/** A refusal as JSON, with its headers: what a client may do (`Idempotent-Resend`), and `Retry-After`. */
export function refusal(error: IdempotencyError): Response {
  const headers = new Headers([["content-type", "application/json"], ...refusalHeaders(error)]);
  const body = {
    error: {
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      resend: error.resend,
      retryAfterMs: error.retryAfterMs ?? null,
    },
  };
  return new Response(JSON.stringify(body), { status: httpStatusOf(error.code), headers });
}
