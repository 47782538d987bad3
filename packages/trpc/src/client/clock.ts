/** Time as the client link sees it: the real clock, or one a test moves itself. */
import { abortableDelay } from "@idemkit/core/internal";

/** Time as the link sees it. */
export interface LinkClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const REAL_CLOCK: LinkClock = { now: () => Date.now(), sleep: abortableDelay };
