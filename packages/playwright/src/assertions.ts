/**
 * The contract a form must keep, checked on what it sent and on what happened, with failure messages that say
 * what was sent: keys, attempts, statuses.
 */
import { DoubleSubmitError } from "./errors.js";
import type { MutationLog } from "./mutations.js";

/**
 * Asserts the form sent `actions` user actions (1 by default) with one key each: every press of the same action,
 * every retry and every resend after a reload reuses its action's key, so the server can tell a repeat from a new
 * action. Waits for the requests to settle first (none pending, none new for half a second).
 */
export async function expectOneKeyPerAction(log: MutationLog, actions = 1): Promise<void> {
  await log.settled();
  const unkeyed = log.sent.filter((entry) => entry.key === undefined).length;
  if (unkeyed > 0) {
    throw new DoubleSubmitError(
      `${unkeyed} mutation(s) went out without an Idempotency-Key: the server cannot tell a repeat of them from a new action.\n${log}`,
    );
  }
  const keys = log.keys();
  if (keys.length > actions) {
    throw new DoubleSubmitError(
      `Expected ${actions} action(s), each with one Idempotency-Key, but the page sent ${keys.length} keys: it mints ` +
        `a new key per press or per retry, so each repeat is a new action to the server.\n${log}`,
    );
  }
  if (keys.length < actions) {
    const why =
      keys.length === 0
        ? "no mutation the filter selects reached the network"
        : "an action sent nothing, or separate actions shared a key (the second is then refused or replayed as the first)";
    throw new DoubleSubmitError(
      `Expected ${actions} action(s) with a key each, but the page sent ${keys.length}: ${why}.\n${log}`,
    );
  }
}

/**
 * Asserts the action's effect happened exactly `times` times (once by default) once the requests sent so far
 * have settled: `count` reads it the way the app would (a query of its API, a database read, the provider's
 * charges), and `before` is what it read before the user acted. It reads twice, a quiet moment apart, so an effect
 * that lands late (sent after the answer: a queue, a retry) is counted too.
 */
export async function expectEffectTimes(
  log: MutationLog,
  count: () => number | Promise<number>,
  { before = 0, times = 1, quietMs = 500 }: { before?: number; times?: number; quietMs?: number } = {},
): Promise<void> {
  await log.settled({ quietMs });
  const first = await count();
  await new Promise((resolve) => setTimeout(resolve, quietMs));
  const counted = await count();
  const happened = counted - before;
  if (happened !== times || counted !== first) {
    const what =
      counted !== first
        ? `it was still changing (${first}, then ${counted})`
        : happened > times
          ? "repeats ran again instead of replaying"
          : "the action was lost, or its effect is not visible to count yet";
    throw new DoubleSubmitError(
      `Expected the effect ${times} time(s), but it happened ${happened} time(s) (count ${counted}, before ${before}): ${what}.\n${log}`,
    );
  }
}
