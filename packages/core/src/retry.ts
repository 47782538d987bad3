/**
 * When a client retries an idempotent request: exponential backoff with full jitter, capped, bounded in attempts
 * and in total time, and never shorter than the server's `Retry-After`. Pure functions of their inputs (the clock and
 * the random source are parameters), so the schedule is tested without waiting and shared by every client.
 *
 * Full jitter (a uniform delay between 0 and the exponential ceiling) spreads the retries of many clients that
 * failed together, so a recovering server is not hit by all of them at the same instant.
 */
import { checkedNumber } from "./numeric-options.js";

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

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts, clearing the timer: a retry
 * wait must never outlive the operation it belongs to.
 */
export function abortableDelay(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A fresh key for one user action: a random UUID v4, never a counter or a timestamp, which collide. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}
