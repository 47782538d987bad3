/** Time as the client link sees it: the real clock, or one a test moves itself. */
import { abortableDelay } from "@idemkit/core/client";

/** Time as the link sees it. */
export interface LinkClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const REAL_CLOCK: LinkClock = { now: () => Date.now(), sleep: abortableDelay };

/** The longest delay a timer holds (2^31 - 1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;
