/**
 * The client half of the contract: every mutation leaves with an `Idempotency-Key` and keeps it on every retry,
 * so a retry after a lost response replays the first result instead of running the mutation again.
 *
 * The link sends mutations itself, one per HTTP request, and passes queries and subscriptions to the next link.
 * Putting it before a batching link is therefore enough: a keyed mutation can never end up in a batch, where one
 * header would have to serve several mutations (the server refuses that with 400).
 *
 *   one mutation ──► attempt 1 ──► lost / 5xx / 409 / 429 ──► wait (Retry-After, else backoff) ──► attempt 2 ──► ...
 *                     same key                                                                      same key
 */
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, type RetryPolicy } from "@idemkit/core";
import {
  abortableDelay,
  DEFAULT_RETRY_POLICY,
  newIdempotencyKey,
  nextRetryDelayMs,
  parseIdempotencyKey,
  parseRetryAfterMs,
} from "@idemkit/core/internal";
import {
  type HTTPHeaders,
  type HTTPLinkOptions,
  httpLink,
  type Operation,
  type OperationResultEnvelope,
  TRPCClientError,
  type TRPCClientRuntime,
  type TRPCLink,
} from "@trpc/client";
import type { AnyTRPCRouter } from "@trpc/server";
import { observable } from "@trpc/server/observable";
import { idempotencyDataOf, isRetryableError, type ResponseLike, responseOf, statusOf } from "./errors.js";

/** What the link reports about one mutation while it runs, for a form to show ("retrying in 2 s"). */
export type IdempotencyProgress =
  | { type: "request"; key: string; attempt: number }
  | {
      type: "retry";
      key: string;
      attempt: number;
      delayMs: number;
      retryAt: number;
      /**
       * The HTTP status the failed attempt was answered with (a 503, a 429), or undefined when no answer came (the
       * connection was lost): what a form says while it waits, "the shop had a problem" or "connection lost".
       */
      status: number | undefined;
      error: TRPCClientError<AnyTRPCRouter>;
    }
  | { type: "offline"; key: string; attempt: number }
  | { type: "success"; key: string; attempt: number; replayed: boolean }
  | { type: "failure"; key: string; attempt: number; retryable: boolean; error: TRPCClientError<AnyTRPCRouter> };

/** Per-mutation settings, passed in the operation context under `idempotency` (see {@link idempotencyContext}). */
export interface IdempotencyCall {
  /** The action's key. Absent: the link mints a UUID v4 for this mutation and keeps it across its retries. */
  key?: string;
  /** Called as the mutation goes: each request, each scheduled retry, offline pauses, the outcome. */
  onProgress?: (progress: IdempotencyProgress) => void;
  /**
   * Stops the mutation's retries and waits when it aborts, like the operation's own signal (which TanStack Query's
   * mutations do not pass): the hook aborts an action the user abandoned with `reset()`.
   */
  signal?: AbortSignal;
}

/** What the link adds to a successful result's context: read it from a later link or from `onProgress`. */
export interface IdempotencyOutcome {
  key: string;
  /** Requests sent, the successful one included. */
  attempts: number;
  /** True when the server answered from its store (`Idempotent-Replayed: true`) instead of running the mutation. */
  replayed: boolean;
}

/** Options of {@link idempotencyLink}: those of tRPC's `httpLink` (url, transformer, headers, fetch), plus `retry`. */
export type IdempotencyLinkOptions<TRouter extends AnyTRPCRouter> = HTTPLinkOptions<
  TRouter["_def"]["_config"]["$types"]
> & {
  /**
   * How mutations are retried; unset fields keep their defaults (5 attempts, 500 ms base, 10 s cap, 60 s in all).
   * Waiting for the browser to come back online counts too: a failure while offline is an attempt, and the wait
   * ends when the budget does. Longer offline windows are TanStack Query's to handle (a mutation started offline
   * is paused before it is sent) or the app's persistence.
   */
  retry?: Partial<RetryPolicy>;
  /**
   * The clock the retry waits and the budget run on, in ms since the epoch (`Retry-After` dates and `retryAt` are
   * read against it). Default: the real one. For tests that move time themselves.
   */
  clock?: LinkClock;
};

/** Time as the link sees it. */
export interface LinkClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

const REAL_CLOCK: LinkClock = { now: () => Date.now(), sleep: abortableDelay };
/** The longest delay a timer holds (2^31 - 1 ms); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Builds the operation context for one mutation: `client.order.place.mutate(input, { context:
 * idempotencyContext({ key }) })`, or `{ trpc: { context: idempotencyContext(...) } }` with TanStack Query.
 */
export function idempotencyContext(call: IdempotencyCall): { idempotency: IdempotencyCall } {
  return { idempotency: call };
}

/**
 * A tRPC link that makes mutations safe to retry: one `Idempotency-Key` per mutation (from the context, or a fresh
 * UUID v4), the same key on every retry, retries with exponential backoff and full jitter on network failures,
 * 5xx, 409 and 429 (honouring `Retry-After`), never on other 4xx, and never after the operation is aborted.
 * Put it before your terminating link; it sends mutations unbatched and forwards everything else:
 *
 *   links: [idempotencyLink({ url, transformer }), httpBatchLink({ url, transformer })]
 *
 * Every mutation it sends must be protected by the `idempotency` middleware: a retried unprotected mutation can
 * run twice. Where only some are, send just those to it with tRPC's `splitLink`.
 */
export function idempotencyLink<TRouter extends AnyTRPCRouter>(
  options: IdempotencyLinkOptions<TRouter>,
): TRPCLink<TRouter> {
  // The router type only constrains what callers may pass (a transformer when the router has one).
  const { retry, clock = REAL_CLOCK, ...http } = options as IdempotencyLinkOptions<AnyTRPCRouter>;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...retry };
  return (runtime) =>
    ({ op, next }) => {
      if (op.type !== "mutation") return next(op);
      return observable((observer) => {
        const stop = new AbortController();
        const call = callOf(op);
        const callers = [op.signal, call.signal].filter((signal): signal is AbortSignal => signal != null);
        const abortFromCaller = (event: Event) => stop.abort((event.target as AbortSignal).reason);
        for (const signal of callers) {
          if (signal.aborted) stop.abort(signal.reason);
          signal.addEventListener("abort", abortFromCaller, { once: true });
        }
        const send = (key: string) => sendOnce(http, runtime, op, key, stop.signal);
        mutateWithRetries(call, op.path, policy, clock, send, stop.signal).then(
          (envelope) => {
            observer.next(envelope);
            observer.complete();
          },
          (error: unknown) => observer.error(toClientError(error)),
        );
        return () => {
          for (const signal of callers) signal.removeEventListener("abort", abortFromCaller);
          stop.abort();
        };
      });
    };
}

async function mutateWithRetries(
  call: IdempotencyCall,
  path: string,
  policy: RetryPolicy,
  clock: LinkClock,
  send: (key: string) => Promise<SendResult>,
  signal: AbortSignal,
): Promise<OperationResultEnvelope<unknown, TRPCClientError<AnyTRPCRouter>>> {
  const key = call.key === undefined ? newIdempotencyKey() : parseIdempotencyKey(call.key, path);
  const report = reportingSafely(call.onProgress);
  const startedAtMs = clock.now();
  for (let attempt = 1; ; attempt++) {
    // An operation aborted before it started (an action the user abandoned) sends nothing.
    signal.throwIfAborted();
    report({ type: "request", key, attempt });
    const sent = await send(key);
    if (sent.ok) {
      const replayed = sent.response?.headers?.get(IDEMPOTENT_REPLAYED_HEADER) === "true";
      report({ type: "success", key, attempt, replayed });
      const outcome: IdempotencyOutcome = { key, attempts: attempt, replayed };
      return { ...sent.envelope, context: { ...sent.envelope.context, idempotency: outcome } };
    }
    const { error } = sent;
    if (signal.aborted) throw error;
    const retryable = isRetryableError(error);
    // Offline, the next attempt waits for the browser to be back, within what is left of the budget.
    if (retryable && statusOf(error) === undefined && isOffline() && attempt < policy.maxAttempts) {
      const leftMs = startedAtMs + policy.maxElapsedMs - clock.now();
      if (leftMs > 0) {
        report({ type: "offline", key, attempt });
        if (await whenOnline(leftMs, clock, signal)) continue;
      }
      report({ type: "failure", key, attempt, retryable, error });
      throw error;
    }
    const nowMs = clock.now();
    const retryAfterMs = retryAfterOf(error, nowMs);
    const delayMs = retryable ? nextRetryDelayMs({ attempt, startedAtMs, nowMs, retryAfterMs }, policy) : undefined;
    if (delayMs === undefined) {
      report({ type: "failure", key, attempt, retryable, error });
      throw error;
    }
    report({ type: "retry", key, attempt, delayMs, retryAt: nowMs + delayMs, status: statusOf(error), error });
    await clock.sleep(delayMs, signal);
  }
}

/** Calls `onProgress` so that it can never change the mutation's outcome: a throw is logged, once per mutation. */
function reportingSafely(onProgress: ((progress: IdempotencyProgress) => void) | undefined) {
  let failed = false;
  return (progress: IdempotencyProgress) => {
    try {
      onProgress?.(progress);
    } catch (error) {
      if (failed) return;
      failed = true;
      console.error("idemkit: onProgress threw; the mutation goes on as if it had not.", error);
    }
  };
}

type SendResult =
  | {
      ok: true;
      envelope: OperationResultEnvelope<unknown, TRPCClientError<AnyTRPCRouter>>;
      response: ResponseLike | undefined;
    }
  | { ok: false; error: TRPCClientError<AnyTRPCRouter> };

/**
 * One HTTP request through tRPC's own `httpLink` (so transformers, FormData and method override behave as
 * usual), with the key header added and the raw response kept: its status and headers decide the retry even
 * when its body is not tRPC's JSON (a proxy's 502 page).
 */
function sendOnce(
  { fetch: userFetch, headers, ...http }: Omit<IdempotencyLinkOptions<AnyTRPCRouter>, "retry">,
  runtime: TRPCClientRuntime,
  op: Operation,
  key: string,
  signal: AbortSignal,
): Promise<SendResult> {
  let response: ResponseLike | undefined;
  const fetchOnce: typeof userFetch = async (input, init) => {
    const fetcher = userFetch ?? globalThis.fetch;
    const answer = await fetcher(input, init as RequestInit);
    response = answer as ResponseLike;
    return answer;
  };
  const options = {
    ...http,
    fetch: fetchOnce,
    headers: async ({ op: sent }: { op: Operation }): Promise<HTTPHeaders> => ({
      ...(typeof headers === "function" ? await headers({ op: sent }) : headers),
      [IDEMPOTENCY_KEY_HEADER]: key,
    }),
  };
  // Typed per router by the caller (a transformer when the router has one); httpLink itself takes any.
  const link = httpLink(options as Parameters<typeof httpLink>[0])(runtime);
  return new Promise((resolve) => {
    const subscription = link({ op: { ...op, signal }, next: () => notTerminating(op) }).subscribe({
      next: (envelope) => resolve({ ok: true, envelope, response }),
      error: (error) => {
        resolve({ ok: false, error: response ? TRPCClientError.from(error, { meta: { response } }) : error });
      },
    });
    signal.addEventListener("abort", () => subscription.unsubscribe(), { once: true });
  });
}

function notTerminating(op: Operation): never {
  throw new Error(`httpLink called next() for ${op.path}: it is a terminating link`);
}

function callOf(op: Operation): IdempotencyCall {
  const call = op.context.idempotency;
  return typeof call === "object" && call !== null ? (call as IdempotencyCall) : {};
}

/** `Retry-After` from the response, else the server's own `data.idempotency.retryAfterMs` (visible through CORS). */
function retryAfterOf(error: TRPCClientError<AnyTRPCRouter>, nowMs: number): number | undefined {
  const fromHeader = parseRetryAfterMs(responseOf(error)?.headers?.get("Retry-After"), nowMs);
  if (fromHeader !== undefined) return fromHeader;
  const fromData = idempotencyDataOf(error)?.retryAfterMs;
  return typeof fromData === "number" ? fromData : undefined;
}

function isOffline(): boolean {
  return globalThis.navigator?.onLine === false && typeof globalThis.addEventListener === "function";
}

/**
 * Resolves true when the browser reports it is back online, false when `withinMs` passed first; rejects if the
 * operation is aborted meanwhile.
 */
async function whenOnline(withinMs: number, clock: LinkClock, signal: AbortSignal): Promise<boolean> {
  signal.throwIfAborted();
  const done = new AbortController();
  const stop = () => done.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  const online = new Promise<boolean>((resolve) => {
    const onOnline = () => resolve(true);
    globalThis.addEventListener("online", onOnline, { once: true });
    done.signal.addEventListener("abort", () => globalThis.removeEventListener("online", onOnline), { once: true });
  });
  // A budget past what a timer can hold (Infinity, or over 2^31 - 1 ms, which timers cut short) waits for the
  // connection alone, as aborting still ends it.
  const timed = withinMs <= MAX_TIMER_MS;
  const aborted = new Promise<never>((_, reject) => {
    done.signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  try {
    return await Promise.race([online, timed ? clock.sleep(withinMs, done.signal).then(() => false) : aborted]);
  } finally {
    signal.removeEventListener("abort", stop);
    aborted.catch(() => {});
    done.abort();
    signal.throwIfAborted();
  }
}

function toClientError(error: unknown): TRPCClientError<AnyTRPCRouter> {
  return TRPCClientError.from(error instanceof Error ? error : new Error(String(error)));
}
