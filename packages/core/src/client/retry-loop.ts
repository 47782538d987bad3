/**
 * The one retry loop of idemkit's clients (the tRPC link, the Server Action hook): an action is sent with its key,
 * and sent again with the same key while its answer is lost or "not now", as the retry policy allows. What counts
 * as an answer, what is retryable, and what is told along the way are the caller's; when to send again is this.
 *
 *   attempt 1 ──► answer ──► done
 *       └──► retryable failure ──► wait (Retry-After, else backoff; or the caller's own wait) ──► attempt 2 ──► ...
 */
import { nextRetryDelayMs, type RetryPolicy } from "../retry.js";

/** What one attempt came to. */
export type Attempted<TAnswer, TFailure> =
  | { answer: TAnswer }
  | {
      failure: TFailure;
      retryable: boolean;
      /** The server's `Retry-After` (or its own hint), in ms: the least to wait before the next attempt. */
      retryAfterMs?: number | undefined;
    };

/** How the loop ended: with an answer, or with the last failure (no more attempts, not retryable, or stopped). */
export type RetryEnd<TAnswer, TFailure> =
  | { answer: TAnswer; attempts: number }
  | { failure: TFailure; attempts: number; retryable: boolean };

export interface RetryLoopOptions<TFailure> {
  policy: RetryPolicy;
  /** Once it aborted, a failure ends the loop: it is not waited on or sent again. */
  signal: AbortSignal;
  /** Milliseconds since the epoch: the real clock, or a test's. */
  now(): number;
  /** Waits `ms` before the next attempt; a rejection (the signal's reason, say) ends the loop with it. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /**
   * A wait of the caller's own in place of the schedule's (the link waits for the browser to be back online):
   * undefined to follow the schedule, else a promise of whether to send again at once. `leftMs` is what remains of
   * the policy's `maxElapsedMs`.
   */
  waitInstead?(failure: TFailure, attempt: number, leftMs: number): Promise<boolean> | undefined;
  /** Told before each scheduled wait. */
  onRetry?(failure: TFailure, attempt: number, delayMs: number, nowMs: number): void;
}

/** Sends attempts through `send` (given each one's number, from 1) until one answers or no retry is left. */
export async function sendWithRetries<TAnswer, TFailure>(
  send: (attempt: number) => Promise<Attempted<TAnswer, TFailure>>,
  { policy, signal, now, sleep, waitInstead, onRetry }: RetryLoopOptions<TFailure>,
): Promise<RetryEnd<TAnswer, TFailure>> {
  const startedAtMs = now();
  for (let attempt = 1; ; attempt++) {
    const sent = await send(attempt);
    if ("answer" in sent) return { answer: sent.answer, attempts: attempt };
    const ended = { failure: sent.failure, attempts: attempt, retryable: sent.retryable };
    if (!sent.retryable || signal.aborted) return ended;
    const instead = waitInstead?.(sent.failure, attempt, startedAtMs + policy.maxElapsedMs - now());
    if (instead) {
      if (await instead) continue;
      return ended;
    }
    const nowMs = now();
    const delayMs = nextRetryDelayMs({ attempt, startedAtMs, nowMs, retryAfterMs: sent.retryAfterMs }, policy);
    if (delayMs === undefined) return ended;
    onRetry?.(sent.failure, attempt, delayMs, nowMs);
    await sleep(delayMs, signal);
  }
}
