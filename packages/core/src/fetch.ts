/**
 * The engine over the Fetch API: `withIdempotency(handler, options)` turns a `(Request) => Response` handler (a
 * Next.js route handler, Hono, Bun, Deno, a Cloudflare worker) into one whose unsafe requests (POST, PUT, PATCH,
 * DELETE) need an `Idempotency-Key` and run once per key. It is built only on what `@idemkit/core` exports, as a
 * third party's adapter would be:
 *
 *   request ─▶ key, scope, body (bounded) ─▶ engine.run ─┬─ first: handler ─▶ its Response, stored (2xx, most 4xx)
 *                                                        ├─ duplicate: the stored Response, `Idempotent-Replayed: true`
 *                                                        └─ refused: 400 / 409 / 413 / 422 / 503, JSON, Retry-After
 *
 * A stored answer keeps its status, its body byte for byte, and the headers that describe it (content type,
 * location, ETag, ...); never `Set-Cookie` or anything else particular to the first client.
 *
 * @module @idemkit/core/fetch
 */

import { fromBase64, toBase64 } from "./base64.js";
import { checkedScope, type IdempotencyContext, idempotencyContextOf } from "./context.js";
import { MAX_TIMER_MS } from "./deadline.js";
import type {
  AdapterOptions,
  IdempotencyEngineOptions,
  IdempotencyMode,
  IdempotentRequest,
  ModeOptions,
  Settlement,
} from "./engine/types.js";
import { createIdempotencyEngine } from "./engine.js";
import { IdempotencyError, IdempotencyErrorCode, isIdempotencyError } from "./errors.js";
import { fingerprint, fingerprintAsync } from "./fingerprint.js";
import { httpStatusOf, refusalHeaders } from "./http-status.js";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, parseIdempotencyKey } from "./key.js";
import { checkedNumber, isLimited } from "./numeric-options.js";
import { isStoredStatus } from "./resend.js";
import type { DefaultModeOf, IdempotencyStore, ModeTransaction } from "./store.js";

/** What the handler gets for one protected request, beside the request itself. */
export type FetchIdempotency<Tx> = IdempotencyContext<Tx>;

/** A Fetch handler that is handed its request's idempotency. */
export type FetchHandler<Tx> = (request: Request, idempotency: FetchIdempotency<Tx>) => Response | Promise<Response>;

/**
 * Options of {@link withIdempotency}: the engine's, with those of the other mode refused at compile time (see
 * `ModeOptions`), and how a request is read.
 */
export type FetchIdempotencyOptions<
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode,
> = FetchCommonOptions<TStore, TMode> & ModeOptions<TMode>;

/** What the Fetch adapter takes in either mode. */
export interface FetchCommonOptions<TStore extends IdempotencyStore<unknown>, TMode extends IdempotencyMode>
  extends AdapterOptions<TStore, TMode> {
  /**
   * Who owns the record: the user or tenant, from the request (its session cookie, its token). Required, so one
   * user can never replay, see or block another's answer by sending the same key.
   */
  scope: (request: Request) => string | Promise<string>;
  /**
   * The endpoint's name in its records, spans and metrics: its route (`() => "/api/orders/[id]/pay"`), never its URL,
   * whose ids would make a name per order (the URL still tells two orders apart, in the fingerprint). Default: one
   * fixed name, "unnamed route", shared by every handler left unnamed, with a warning: name each route.
   */
  path?: (request: Request) => string;
  /** The largest body read, in bytes; a larger one is answered 413 and nothing runs. Default 1 MiB. */
  maxBodyBytes?: number;
  /** How long the body may take to arrive, in ms; past it the request is answered 408 and nothing runs. Default 10 s. */
  bodyTimeoutMs?: number;
  /** Store 5xx answers too, so retries replay them instead of running again. Off by default. */
  storeServerErrors?: boolean;
}

/** The name of a route handler protected without a `path`. */
const UNNAMED_ROUTE = "unnamed route";

let warnedUnnamed = false;
function warnUnnamed(): void {
  if (warnedUnnamed) return;
  warnedUnnamed = true;
  console.warn(
    `withIdempotency(): a route handler has no \`path\`, so its records, spans and metrics are named "${UNNAMED_ROUTE}", ` +
      'as every unnamed one is. Name each by its route: `path: () => "/api/orders/[id]/pay"`.',
  );
}

/** The methods that change something: the ones protected. */
const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

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
interface StoredFetchBody {
  headers: [string, string][];
  text?: string;
  base64?: string;
}

/**
 * Protects `handler`: every POST, PUT, PATCH and DELETE needs an `Idempotency-Key` (other methods are answered
 * 405: mount it on the methods that change something); the first request with a key
 * runs, its duplicates get its answer again, one that arrives while it runs waits for it (atomic mode) or is told
 * 409 with `Retry-After`, and the same key with another body is refused 422. Nothing runs unprotected: a missing
 * key, a store that is down or a body too large is refused before the handler is called.
 *
 *   export const POST = withIdempotency(
 *     async (request, { tx }) => Response.json(await placeOrder(tx, await request.json()), { status: 201 }),
 *     { store: drizzleStore({ db }), scope: (request) => userIdOf(request) },
 *   );
 */
export function withIdempotency<
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode = DefaultModeOf<TStore>,
>(
  handler: FetchHandler<ModeTransaction<TStore, TMode>>,
  options: FetchIdempotencyOptions<TStore, TMode>,
): (request: Request) => Promise<Response> {
  if (options.path === undefined) warnUnnamed();
  const {
    scope: scopeOf,
    path: pathOf = () => UNNAMED_ROUTE,
    maxBodyBytes = 1_048_576,
    bodyTimeoutMs = 10_000,
    storeServerErrors = false,
    ...engineOptions
  } = options;
  checkedNumber("withIdempotency()", "maxBodyBytes", maxBodyBytes, { whole: true });
  checkedNumber("withIdempotency()", "bodyTimeoutMs", bodyTimeoutMs, { min: 1, unlimited: true });
  const engine = createIdempotencyEngine<unknown>(engineOptions as IdempotencyEngineOptions<unknown>);

  return async (request) => {
    if (!UNSAFE_METHODS.has(request.method)) return notProtected(request.method);
    try {
      const path = pathOf(request);
      const key = parseIdempotencyKey(request.headers.get(IDEMPOTENCY_KEY_HEADER) ?? missingKey(path), path);
      const scope = checkedScope(await scopeOf(request), "withIdempotency()");
      const body = await boundedBody(request, maxBodyBytes, bodyTimeoutMs);
      const identity: IdempotentRequest = { scope, path, key, fingerprint: await fingerprintOf(request, body) };
      const run = await engine.run(identity, async (execution): Promise<Settlement<Response>> => {
        const idempotency = idempotencyContextOf<ModeTransaction<TStore, TMode>>(identity, execution);
        const answer = await handler(rebuilt(request, body), idempotency);
        if (!isStoredStatus(answer.status, { storeServerErrors })) return { value: answer, response: undefined };
        // Its body is read after the handler ran: an answer that fails then is not the handler failing.
        return execution.answer(async (): Promise<Settlement<Response>> => {
          const { stored, bytes } = await storedBodyOf(answer);
          // Read to be stored, the answer goes to its own client whole: all its headers, Set-Cookie included.
          const first = new Response(bodyless(answer.status) ? null : bytes, answer);
          return { value: first, response: { status: answer.status, body: JSON.stringify(stored) } };
        });
      });
      if (!run.replayed) return run.value;
      return replayOf(run.response.status, JSON.parse(run.response.body) as StoredFetchBody, true);
    } catch (error) {
      if (!isIdempotencyError(error)) throw error;
      // A body refused unread is read and dropped a while, so that its client reads the refusal, not a reset.
      if (request.body && !request.bodyUsed) await discardRest(request.body.getReader());
      return refusal(error);
    }
  };
}

/**
 * What tells two requests with one key apart: the method, the path and query, the media type and the body. JSON
 * and other bodies are compared byte for byte; a multipart form by its fields and files, as its boundary is drawn
 * anew each time a client sends it.
 */
async function fingerprintOf(request: Request, body: Uint8Array<ArrayBuffer>): Promise<string> {
  const mediaType = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const identity = { method: request.method, url: pathAndQuery(request.url), mediaType };
  if (mediaType === "multipart/form-data") {
    const form = await rebuilt(request, body)
      .formData()
      .catch((cause: unknown) => {
        throw new IdempotencyError(
          IdempotencyErrorCode.BODY_INVALID,
          "The request's body is not the multipart form its Content-Type says; nothing ran. Send a well-formed one.",
          { cause },
        );
      });
    return fingerprintAsync({ ...identity, fields: [...form.entries()] });
  }
  return fingerprint({ ...identity, body: await sha256Bytes(body) });
}

/**
 * A method that changes nothing (GET, HEAD, OPTIONS) has no key to run under: mount the handler on the methods that
 * change something (a route's `POST`), and serve the others without it.
 */
function notProtected(method: string): Response {
  return Response.json(
    {
      error: {
        code: "METHOD_NOT_ALLOWED",
        message: `${method} is not protected here: send POST, PUT, PATCH or DELETE.`,
      },
    },
    { status: 405, headers: { allow: [...UNSAFE_METHODS].join(", ") } },
  );
}

function missingKey(path: string): never {
  throw new IdempotencyError(
    IdempotencyErrorCode.KEY_MISSING,
    `The ${IDEMPOTENCY_KEY_HEADER} header is required for ${path}: send one UUID per user action, the same on every retry.`,
  );
}

/** The request's body, read once within `maxBytes` and `timeoutMs`; refused before anything runs otherwise. */
async function boundedBody(request: Request, maxBytes: number, timeoutMs: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    // Infinity is no limit: setTimeout would fire at once for it.
    if (!isLimited(timeoutMs)) return;
    timer = setTimeout(
      () => {
        reject(
          new IdempotencyError(
            IdempotencyErrorCode.BODY_TIMEOUT,
            `The request's body did not arrive within ${timeoutMs} ms; nothing ran. Send it again with the same key.`,
          ),
        );
      },
      Math.min(timeoutMs, MAX_TIMER_MS),
    );
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await discardRest(reader);
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** How long the rest of a refused body is read and dropped, so that its client reads the 413 rather than a reset. */
const DISCARD_MS = 2_000;

/** Reads and drops what is left of a body, for `DISCARD_MS` at most. */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const enough = new Promise<{ done: true }>((resolve) => {
    timer = setTimeout(() => resolve({ done: true }), DISCARD_MS);
  });
  try {
    for (;;) {
      const { done } = await Promise.race([reader.read(), enough]);
      if (done) return;
    }
  } catch {
    // A body that fails while it is dropped changes nothing: it is refused all the same.
  } finally {
    clearTimeout(timer);
  }
}

function tooLarge(maxBytes: number): IdempotencyError {
  return new IdempotencyError(
    IdempotencyErrorCode.BODY_TOO_LARGE,
    `The request's body is larger than ${maxBytes} bytes; nothing ran.`,
  );
}

/** The request again, with the body already read, for the handler to read as usual. */
function rebuilt(request: Request, body: Uint8Array<ArrayBuffer>): Request {
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    ...(body.byteLength > 0 && { body }),
    signal: request.signal,
  });
}

function pathAndQuery(url: string): string {
  const { pathname, search } = new URL(url);
  return pathname + search;
}

async function sha256Bytes(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** What is stored of an answer (its describing headers, its body), and the body's bytes. */
async function storedBodyOf(answer: Response): Promise<{ stored: StoredFetchBody; bytes: Uint8Array<ArrayBuffer> }> {
  const headers = REPLAYED_HEADERS.flatMap((name): [string, string][] => {
    const value = answer.headers.get(name);
    return value === null ? [] : [[name, value]];
  });
  const bytes = new Uint8Array(await answer.arrayBuffer());
  try {
    return { stored: { headers, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) }, bytes };
  } catch {
    return {
      stored: { headers, base64: toBase64(bytes) },
      bytes,
    };
  }
}

/** Statuses whose answers have no body (a Response refuses one). */
function bodyless(status: number): boolean {
  return status === 204 || status === 205 || status === 304;
}

function replayOf(status: number, stored: StoredFetchBody, replayed: boolean): Response {
  const headers = new Headers(stored.headers);
  if (replayed) headers.set(IDEMPOTENT_REPLAYED_HEADER, "true");
  const body = stored.base64 !== undefined ? fromBase64(stored.base64) : stored.text;
  return new Response(bodyless(status) ? null : body, { status, headers });
}

/** A refusal as JSON, with its headers: what a client may do (`Idempotent-Resend`), and `Retry-After`. */
function refusal(error: IdempotencyError): Response {
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
