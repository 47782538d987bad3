/**
 * How the hook asks the app's outcome lookup what became of an action it has no answer for: again, less and less
 * often, while the action still runs, until it can no longer be running; and never past the form's life.
 */

import { abortableDelay } from "../deadline.js";
import type { IdempotencyOutcomeAnswer } from "../outcome.js";

/** The app's outcome lookup, as the hook calls it: `(input, { signal }) => trpcClient.idempotencyOutcome.query(input, { signal })`. */
export type OutcomeLookup = (
  input: { path: string; key: string },
  options: { signal: AbortSignal },
) => Promise<IdempotencyOutcomeAnswer>;

/**
 * How long an action can answer `running`, by default: the middleware's default `maxHoldMs` (15 minutes, the
 * longest a lease-mode call keeps renewing its lease) plus one default `leaseMs` (60 s, for the last lease to run
 * out). An atomic-mode call is bounded sooner, by its `transactionTimeoutMs`.
 */
export const DEFAULT_LOOKUP_MAX_RUNNING_MS = 15 * 60_000 + 60_000;

/**
 * The pause before asking again while the action runs: 1 s at first, doubled after each answer up to 30 s. A call
 * that answers in seconds is shown soon after it does; one held for minutes costs a request every 30 s, not every
 * second. No jitter: one page asks about its own action, and pages reloaded together are already spread out.
 */
const FIRST_PAUSE_MS = 1_000;
const LONGEST_PAUSE_MS = 30_000;

/**
 * Asks `lookup` until the action is no longer running, or `signal` aborts, handing each answer to `onAnswer`. Past
 * `maxRunningMs` of pauses no call can still hold the key, so a `running` answer then would be wrong (a store the
 * lease did not reach, a skewed clock): the hook is handed `unknown` instead, on which pressing again sends the
 * action with its key, and the server replays it, runs it once, or makes it wait. A lookup that fails ends it
 * quietly: it is a convenience, the key is kept, and pressing again is always safe.
 */
export async function settledOutcome(
  lookup: OutcomeLookup,
  input: { path: string; key: string },
  { signal, maxRunningMs }: { signal: AbortSignal; maxRunningMs: number },
  onAnswer: (outcome: IdempotencyOutcomeAnswer) => void,
): Promise<void> {
  let pausedMs = 0;
  for (let asked = 0; !signal.aborted; asked++) {
    const outcome = await lookup(input, { signal }).catch(() => undefined);
    if (!outcome || signal.aborted) return;
    if (outcome.state === "running" && pausedMs >= maxRunningMs) {
      onAnswer({ state: "unknown" });
      return;
    }
    onAnswer(outcome);
    if (outcome.state !== "running") return;
    const pauseMs = Math.min(FIRST_PAUSE_MS * 2 ** asked, LONGEST_PAUSE_MS, maxRunningMs - pausedMs);
    pausedMs += pauseMs;
    await abortableDelay(pauseMs, signal).catch(() => {});
  }
}
