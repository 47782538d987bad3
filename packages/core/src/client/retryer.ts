/**
 * The one retryer of idemkit's clients (the tRPC link, and the Server Action hook): an action is sent with its key,
 * and sent again with the same key while its answer is lost or "not now", as the retry policy allows. It backs off
 * exponentially with full jitter, never less than the server's `Retry-After`; it pauses while the browser is
 * offline and resumes once it is back; it stops when its signal aborts. What counts as an answer, what is
 * retryable (the resend rule, `nextStep`) and what is told along the way are the caller's; when to send again is
 * this file's.
 *
 *   attempt 1 ──► answer ──► done
 *       └──► retryable failure ──► offline? wait for the connection ──────────────► attempt 2 ──► ...
 *                                  else wait (Retry-After, else backoff) ─────────┘   same key
 *
 * Full jitter (a uniform delay between 0 and the exponential ceiling) spreads the retries of many clients that
 * failed together, so a recovering server is not hit by all of them at the same instant. The schedule is a pure
 * function of its inputs (the clock and the random source are parameters), tested without waiting.
 */
import { abortableDelay, MAX_TIMER_MS } from "../deadline.js";
import { checkedNumber } from "../numeric-options.js";

/** How one operation is retried. Every time is in milliseconds. */
export interface RetryPolicy {
  /** Most requests sent for one operation, the first one included. Default 5. */
  maxAttempts: number;
  /** Ceiling of the first retry's delay; the ceiling doubles with each retry. Default 500 ms. */
  baseDelayMs: number;
  /** Largest delay the schedule picks by itself (a server's `Retry-After` may ask for more). Default 10 s. */
  maxDelayMs: number;
  /** No retry is sent later than this after the first request. Default 60 s. */
  maxElapsedMs: number;
}

/** The policy used where a client sets none. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  maxElapsedMs: 60_000,
});

/**
 * `retry` over the defaults, each number checked as the client is built (a `TypeError` then, not a loop that never
 * waits or never ends). `Infinity` lifts the attempt and total-time bounds; the delays are finite.
 */
export function retryPolicyOf(retry: Partial<RetryPolicy> | undefined, owner: string): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...retry };
  checkedNumber(owner, "retry.maxAttempts", policy.maxAttempts, { min: 1, whole: true, unlimited: true });
  checkedNumber(owner, "retry.baseDelayMs", policy.baseDelayMs);
  checkedNumber(owner, "retry.maxDelayMs", policy.maxDelayMs);
  checkedNumber(owner, "retry.maxElapsedMs", policy.maxElapsedMs, { unlimited: true });
  return policy;
}

/**
 * The delay before the retry that follows failed attempt number `attempt` (1 = the first request): uniform in
 * [0, min(maxDelayMs, baseDelayMs * 2^(attempt - 1))]. `random` returns a number in [0, 1), like `Math.random`.
 */
export function backoffDelayMs(
  attempt: number,
  { baseDelayMs, maxDelayMs }: Pick<RetryPolicy, "baseDelayMs" | "maxDelayMs">,
  random: () => number = Math.random,
): number {
  const ceilingMs = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(random() * ceilingMs);
}

const DELAY_SECONDS = /^\d+$/;
// IMF-fixdate, RFC 850 and asctime dates (RFC 9110 §5.6.7) all start with a day name; this also keeps values
// like "1.5", which Date.parse would read as a date, out.
const HTTP_DATE = /^[A-Za-z]{3}/;

/**
 * Reads a `Retry-After` header value (RFC 9110 §10.2.3) as a delay from `nowMs`: delay-seconds (`"120"`) or an
 * HTTP date (`"Wed, 21 Oct 2026 07:28:00 GMT"`; a past date is 0). Undefined when absent or unreadable, so the
 * caller falls back to its own schedule.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (DELAY_SECONDS.test(text)) return Number(text) * 1000;
  if (!HTTP_DATE.test(text)) return undefined;
  const dateMs = Date.parse(text);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}

/** What {@link nextRetryDelayMs} needs to know about the operation so far. */
export interface RetryState {
  /** Number of the attempt that just failed: 1 for the first request. */
  attempt: number;
  /** When the first request was sent, in ms since the epoch (or any clock `nowMs` shares). */
  startedAtMs: number;
  nowMs: number;
  /**
   * The server's `Retry-After`, already parsed: the least the client waits (RFC 9110 §10.2.3), even above
   * `maxDelayMs`. The schedule's own delay still applies when it is longer, so a short hint repeated on every
   * attempt still backs off.
   */
  retryAfterMs?: number | undefined;
}

/**
 * The delay before the next attempt, or undefined when the operation must stop: attempts used up, or the retry
 * would start after `maxElapsedMs` (including a `Retry-After` that asks to wait past it).
 */
export function nextRetryDelayMs(
  { attempt, startedAtMs, nowMs, retryAfterMs }: RetryState,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
  random: () => number = Math.random,
): number | undefined {
  if (attempt >= policy.maxAttempts) return undefined;
  const delayMs = Math.max(retryAfterMs ?? 0, backoffDelayMs(attempt, policy, random));
  return nowMs + delayMs - startedAtMs > policy.maxElapsedMs ? undefined : delayMs;
}

/** Time as a client's retries see it: the real clock, or one a test moves itself. */
export interface RetryClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const REAL_CLOCK: RetryClock = { now: () => Date.now(), sleep: abortableDelay };

/** What one attempt came to. */
export type Attempted<TAnswer, TFailure> =
  | { answer: TAnswer }
  | {
      failure: TFailure;
      retryable: boolean;
      /** The server's `Retry-After` (or its own hint), in ms: the least to wait before the next attempt. */
      retryAfterMs?: number | undefined;
      /** No answer arrived (the connection failed): while the browser is offline, the retryer waits for it. */
      lost?: boolean;
    };

/** How the retryer ended: with an answer, or with the last failure (no more attempts, not retryable, or stopped). */
export type RetryEnd<TAnswer, TFailure> =
  | { answer: TAnswer; attempts: number }
  | { failure: TFailure; attempts: number; retryable: boolean };

export interface RetryerOptions<TFailure> {
  policy: RetryPolicy;
  /**
   * Once it aborted, a failure ends the retries with it: it is not waited on or sent again. A wait it ends (a
   * backoff, or for the connection) rejects `retrying` with the signal's reason, as an aborted fetch rejects.
   */
  signal: AbortSignal;
  /** The clock the waits and the budget run on. Default: the real one. */
  clock?: RetryClock | undefined;
  /** Told before each scheduled wait. */
  onRetry?(failure: TFailure, attempt: number, delayMs: number, nowMs: number): void;
  /** Told when a lost attempt waits for the browser to be back online. */
  onOffline?(attempt: number): void;
}

/**
 * Sends attempts through `send` (given each one's number, from 1) until one answers or no retry is left: after a
 * retryable failure it waits (for the connection while offline, else by the schedule) and sends again.
 */
export async function retrying<TAnswer, TFailure>(
  send: (attempt: number) => Promise<Attempted<TAnswer, TFailure>>,
  { policy, signal, clock = REAL_CLOCK, onRetry, onOffline }: RetryerOptions<TFailure>,
): Promise<RetryEnd<TAnswer, TFailure>> {
  const startedAtMs = clock.now();
  for (let attempt = 1; ; attempt++) {
    const sent = await send(attempt);
    if ("answer" in sent) return { answer: sent.answer, attempts: attempt };
    const ended = { failure: sent.failure, attempts: attempt, retryable: sent.retryable };
    if (!sent.retryable || signal.aborted) return ended;
    if (sent.lost && isOffline() && attempt < policy.maxAttempts) {
      const leftMs = startedAtMs + policy.maxElapsedMs - clock.now();
      if (leftMs <= 0) return ended;
      onOffline?.(attempt);
      if (await whenOnline(leftMs, clock, signal)) continue;
      return ended;
    }
    const nowMs = clock.now();
    const delayMs = nextRetryDelayMs({ attempt, startedAtMs, nowMs, retryAfterMs: sent.retryAfterMs }, policy);
    if (delayMs === undefined) return ended;
    onRetry?.(sent.failure, attempt, delayMs, nowMs);
    await clock.sleep(delayMs, signal);
  }
}

/** True in a browser that reports itself offline; never outside a browser, which has no such report. */
function isOffline(): boolean {
  return globalThis.navigator?.onLine === false && typeof globalThis.addEventListener === "function";
}

/**
 * Resolves true when the browser reports it is back online, false when `withinMs` passed first; rejects if the
 * operation is aborted meanwhile.
 */
async function whenOnline(withinMs: number, clock: RetryClock, signal: AbortSignal): Promise<boolean> {
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
