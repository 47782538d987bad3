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

import { checkedScope, type IdempotencyContext, idempotencyContextOf } from "./context.js";
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
import { boundedBody, discardRest, fingerprintOf, rebuilt } from "./fetch-request.js";
import { keptAnswerOf, refusal, replayOf, type StoredFetchBody } from "./fetch-response.js";
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from "./key.js";
import { checkedNumber } from "./numeric-options.js";
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
          const { stored, first } = await keptAnswerOf(answer);
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
