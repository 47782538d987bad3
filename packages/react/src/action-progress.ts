/**
 * What the link has said about the action in flight, as the hook shows it: the attempt, the retry waiting and why,
 * a wait for the connection or for another tab, whether the answer was a replay. A pure reducer over the link's
 * progress events.
 */
import type { IdempotencyProgress } from "@idemkit/trpc/client";

export interface Progress {
  attempt: number;
  nextRetryAt: number | undefined;
  failedAttemptStatus: number | undefined;
  waitingForTabUntil: number | undefined;
  replayed: boolean;
  offline: boolean;
}

export const IDLE: Progress = {
  attempt: 0,
  nextRetryAt: undefined,
  failedAttemptStatus: undefined,
  waitingForTabUntil: undefined,
  replayed: false,
  offline: false,
};

/** No retry waiting, so no failed attempt to tell about. */
const NOT_WAITING = { nextRetryAt: undefined, failedAttemptStatus: undefined } as const;

/** The progress after `event`. */
export function nextProgress(current: Progress, event: IdempotencyProgress): Progress {
  switch (event.type) {
    case "request":
      return { ...current, attempt: event.attempt, ...NOT_WAITING, offline: false };
    case "retry":
      return { ...current, nextRetryAt: event.retryAt, failedAttemptStatus: event.status };
    case "offline":
      return { ...current, ...NOT_WAITING, offline: true };
    case "success":
      return { ...current, ...NOT_WAITING, offline: false, replayed: event.replayed };
    case "failure":
      // The link gave up (offline past its budget, among others): nothing waits for the connection any more.
      return { ...current, ...NOT_WAITING, offline: false };
  }
}
