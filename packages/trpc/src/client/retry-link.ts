/**
 * The client half of the contract: every mutation gets an `Idempotency-Key` and keeps it on every retry, so a
 * retry after a lost response replays the first result instead of running the mutation again. The link decides
 * only when to send again; the links after it send, as tRPC's own `retryLink` does:
 *
 *   one mutation ──► attempt 1 ──► lost / 5xx / 409 / 429 ──► wait (Retry-After, else backoff) ──► attempt 2 ──► ...
 *                     same key                                                                      same key
 */

import { parseIdempotencyKey } from "@idemkit/core";
import type { RetryPolicy } from "@idemkit/core/client";
import {
  checkedNumber,
  MAX_TIMER_MS,
  newIdempotencyKey,
  parseRetryAfterMs,
  REAL_CLOCK,
  type RetryClock,
  retrying,
  retryPolicyOf,
} from "@idemkit/core/client";
import { type Operation, type OperationResultEnvelope, TRPCClientError, type TRPCLink } from "@trpc/client";
import type { AnyTRPCRouter } from "@trpc/server";
import { observable } from "@trpc/server/observable";
import { idempotencyDataOf, isReplayedAnswer, isRetryableError, responseOf, statusOf } from "./errors.js";

/** Time as the link sees it: the real clock, or one a test moves itself (`clock`). */
export type LinkClock = RetryClock;

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

/** Options of {@link idempotencyRetryLink}. */
export interface IdempotencyRetryLinkOptions {
  /**
   * How mutations are retried; unset fields keep their defaults (5 attempts, 500 ms base, 10 s cap, 60 s in all).
   * Waiting for the browser to come back online counts too: a failure while offline is an attempt, and the wait
   * ends when the budget does. Longer offline windows are TanStack Query's to handle (a mutation started offline
   * is paused before it is sent) or the app's persistence.
   */
  retry?: Partial<RetryPolicy> | undefined;
  /**
   * How long one attempt waits for an answer, in ms, before it is given up as lost (its request aborted) and sent
   * again with the same key if the budget allows: a request that hangs never holds the mutation for ever. Longer
   * than the server takes to answer a slow call (its `transactionTimeoutMs` or `procedureTimeoutMs`, 30 s by
   * default). Default 60 seconds.
   */
  attemptTimeoutMs?: number | undefined;
  /**
   * The clock the retry waits and the budget run on, in ms since the epoch (`Retry-After` dates and `retryAt` are
   * read against it). Default: the real one. For tests that move time themselves.
   */
  clock?: LinkClock | undefined;
}

/** How long an attempt waits for its answer by default: past the server's own 30 s bounds on a slow call. */
const DEFAULT_ATTEMPT_TIMEOUT_MS = 60_000;

/**
 * Builds the operation context for one mutation: `client.order.place.mutate(input, { context:
 * idempotencyContext({ key }) })`, or `{ trpc: { context: idempotencyContext(...) } }` with TanStack Query.
 */
export function idempotencyContext(call: IdempotencyCall): { idempotency: IdempotencyCall } {
  return { idempotency: call };
}

/**
 * A tRPC link that makes mutations safe to retry, over the terminating links you already have: one
 * `Idempotency-Key` per mutation (from the context, or a fresh UUID v4), the same key on every retry, retries with
 * exponential backoff and full jitter on lost answers, 5xx, 409 and 429 (honouring `Retry-After`), never on other
 * 4xx, and never after the operation is aborted. Queries and subscriptions pass through untouched. The link that
 * sends a mutation writes its key with {@link idempotencyHeaders}:
 *
 *   links: [
 *     idempotencyRetryLink(),
 *     splitLink({
 *       condition: (op) => op.type === "mutation",
 *       true: httpLink({ url, transformer, headers: idempotencyHeaders }),
 *       false: httpBatchStreamLink({ url, transformer }),
 *     }),
 *   ]
 *
 * Every mutation it sees must be protected by the `idempotency` middleware: a retried unprotected mutation can run
 * twice. Where only some are, put it in the branch of a `splitLink` that takes just those. An answer whose body is
 * not tRPC's JSON (a proxy's 502 page) reaches this link without its status through tRPC's links, so it is retried
 * as a lost answer; `idempotencyLink({ url })` reads the status of every answer.
 */
export function idempotencyRetryLink<TRouter extends AnyTRPCRouter>(
  options: IdempotencyRetryLinkOptions = {},
): TRPCLink<TRouter> {
  const { retry, clock = REAL_CLOCK, attemptTimeoutMs = DEFAULT_ATTEMPT_TIMEOUT_MS } = options;
  checkedNumber("idempotencyLink()", "attemptTimeoutMs", attemptTimeoutMs, { min: 1, unlimited: true });
  const policy: RetryPolicy = retryPolicyOf(retry, "idempotencyLink()");
  return () =>
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
        const send = (key: string, withinMs: number) =>
          sendAttempt(next, op, { ...call, key }, { signal: stop.signal, withinMs, clock });
        // Set before the observer hears the outcome, whose completion tears this down at once.
        let settled = false;
        mutateWithRetries(call, op.path, { policy, attemptTimeoutMs }, clock, send, stop.signal).then(
          (envelope) => {
            settled = true;
            observer.next(envelope);
            observer.complete();
          },
          (error: unknown) => {
            settled = true;
            observer.error(toClientError(error));
          },
        );
        return () => {
          for (const signal of callers) signal.removeEventListener("abort", abortFromCaller);
          // Only a mutation still going is stopped: after its answer, the links below may still be reading the
          // rest of a streamed response (its nested promises) through the same signal.
          if (!settled) stop.abort();
        };
      });
    };
}

type Envelope = OperationResultEnvelope<unknown, TRPCClientError<AnyTRPCRouter>>;

type SendResult = { ok: true; envelope: Envelope } | { ok: false; error: TRPCClientError<AnyTRPCRouter> };

/**
 * One attempt through the links below, settled exactly once: by its result, its error, a completion without a
 * result (wsLink completes an aborted request so), the signal aborting, or `withinMs` passing without an answer (a
 * transport that hangs), whichever comes first. The links below see the attempt's own signal, which aborts with the
 * caller's, and when the attempt runs out of time.
 */
function sendAttempt(
  next: (op: Operation) => ReturnType<ReturnType<TRPCLink<AnyTRPCRouter>>>,
  op: Operation,
  call: IdempotencyCall,
  { signal, withinMs, clock }: { signal: AbortSignal; withinMs: number; clock: LinkClock },
): Promise<SendResult> {
  return new Promise<SendResult>((resolve) => {
    const failed = (cause: unknown) => ({ ok: false, error: toClientError(cause) }) as const;
    if (signal.aborted) {
      resolve(failed(signal.reason));
      return;
    }
    const stop = new AbortController();
    const attempt: Operation = { ...op, signal: stop.signal, context: { ...op.context, idempotency: call } };
    let subscription: { unsubscribe(): void } | undefined;
    let settled = false;
    const onAbort = () => {
      stop.abort(signal.reason);
      settle(failed(signal.reason));
    };
    const timer = new AbortController();
    function settle(result: SendResult) {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      timer.abort();
      subscription?.unsubscribe();
      resolve(result);
    }
    signal.addEventListener("abort", onAbort, { once: true });
    // A budget past what a timer holds (Infinity among others) leaves the attempt to the caller's abort alone.
    if (withinMs <= MAX_TIMER_MS) {
      clock.sleep(Math.max(0, withinMs), timer.signal).then(
        () => {
          const late = new Error(`${op.path}: no answer within attemptTimeoutMs (${withinMs} ms)`);
          stop.abort(late);
          settle(failed(late));
        },
        () => {},
      );
    }
    subscription = next(attempt).subscribe({
      next: (envelope) => settle({ ok: true, envelope }),
      error: (error) => settle({ ok: false, error }),
      complete: () => settle(failed(new Error(`${op.path}: the link completed without an answer`))),
    });
    if (settled) subscription.unsubscribe();
  });
}

async function mutateWithRetries(
  call: IdempotencyCall,
  path: string,
  { policy, attemptTimeoutMs }: { policy: RetryPolicy; attemptTimeoutMs: number },
  clock: LinkClock,
  send: (key: string, withinMs: number) => Promise<SendResult>,
  signal: AbortSignal,
): Promise<Envelope> {
  const key = call.key === undefined ? newIdempotencyKey() : parseIdempotencyKey(call.key, path);
  const report = reportingSafely(call.onProgress);
  const ended = await retrying<Envelope, TRPCClientError<AnyTRPCRouter>>(
    async (attempt) => {
      // An operation aborted before it started (an action the user abandoned) sends nothing.
      signal.throwIfAborted();
      report({ type: "request", key, attempt });
      // An attempt that hangs is given up as an answer that never came; one that is just slow (a duplicate waiting
      // for the first call) still gets its answer, even late in the budget.
      const sent = await send(key, attemptTimeoutMs);
      if (sent.ok) return { answer: sent.envelope };
      const { error } = sent;
      return {
        failure: error,
        retryable: isRetryableError(error),
        retryAfterMs: retryAfterOf(error, clock.now()),
        lost: statusOf(error) === undefined,
      };
    },
    {
      policy,
      signal,
      clock,
      onOffline: (attempt) => report({ type: "offline", key, attempt }),
      onRetry(error, attempt, delayMs, nowMs) {
        report({ type: "retry", key, attempt, delayMs, retryAt: nowMs + delayMs, status: statusOf(error), error });
      },
    },
  );
  if ("answer" in ended) {
    const replayed = isReplayedAnswer(responseOfEnvelope(ended.answer));
    report({ type: "success", key, attempt: ended.attempts, replayed });
    const outcome: IdempotencyOutcome = { key, attempts: ended.attempts, replayed };
    return { ...ended.answer, context: { ...ended.answer.context, idempotency: outcome } };
  }
  const { failure: error, attempts, retryable } = ended;
  // A mutation stopped by its caller ends with its last failure, unreported: nobody waits for it any more.
  if (!signal.aborted) report({ type: "failure", key, attempt: attempts, retryable, error });
  throw error;
}

/** The HTTP response a terminating link put in a result's context (tRPC's own links put it at `response`). */
function responseOfEnvelope(envelope: Envelope) {
  return (envelope.context as { response?: Parameters<typeof isReplayedAnswer>[0] } | undefined)?.response;
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

function toClientError(error: unknown): TRPCClientError<AnyTRPCRouter> {
  return TRPCClientError.from(error instanceof Error ? error : new Error(String(error)));
}
