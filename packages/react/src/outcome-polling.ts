/**
 * How the hook asks the app's outcome lookup what became of an action it has no answer for: again while the
 * action still runs, and never past the form's life.
 */
import type { IdempotencyOutcomeAnswer } from "@idemkit/core";
import { abortableDelay } from "@idemkit/core/internal";

/** The app's outcome lookup, as the hook calls it: `(input, { signal }) => trpcClient.idempotencyOutcome.query(input, { signal })`. */
export type OutcomeLookup = (
  input: { path: string; key: string },
  options: { signal: AbortSignal },
) => Promise<IdempotencyOutcomeAnswer>;

/** How often, and how many times, the lookup is asked again while the action is still running. */
const LOOKUP_INTERVAL_MS = 1_000;
const LOOKUP_ATTEMPTS = 30;

/**
 * Asks `lookup` until the action is no longer running (every second, 30 times at most), or `signal` aborts, handing
 * each answer to `onAnswer`. A lookup that fails ends it quietly: it is a convenience, the key is kept, and pressing
 * again is always safe.
 */
export async function settledOutcome(
  lookup: OutcomeLookup,
  input: { path: string; key: string },
  signal: AbortSignal,
  onAnswer: (outcome: IdempotencyOutcomeAnswer) => void,
): Promise<void> {
  for (let attempt = 0; attempt < LOOKUP_ATTEMPTS && !signal.aborted; attempt++) {
    const outcome = await lookup(input, { signal }).catch(() => undefined);
    if (!outcome || signal.aborted) return;
    onAnswer(outcome);
    if (outcome.state !== "running") return;
    await abortableDelay(LOOKUP_INTERVAL_MS, signal).catch(() => {});
  }
}
