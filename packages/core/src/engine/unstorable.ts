/**
 * Once a call's work has run, nothing that fails afterwards may release its key: the retry would run the work a
 * second time (a charge made twice). What fails afterwards is turning the work's outcome into what is stored: an
 * adapter serializing a value, reading a response's body, the app's `redact`. The adapter builds its answer in
 * `execution.answer(...)`, whose throw is told from the work's own by this wrapper. In lease mode the engine then
 * keeps a refusal for the key in the answer's place (`stored-refusal.ts`); in atomic mode the work's writes are
 * still uncommitted, so they are rolled back with the claim, and nothing is kept.
 */
import { IdempotencyError, IdempotencyErrorCode } from "../errors.js";
import type { OnceLog } from "../operator-detail.js";
import { storedRefusal } from "../stored-refusal.js";
import { IdempotencyEventType, type IdempotentRequest, type RunResult, type Settlement } from "./types.js";

/** An answer that failed to build after its work ran: `error` is why. */
export class UnstorableAnswer extends Error {
  constructor(readonly error: unknown) {
    super("The answer could not be built after its work ran.", { cause: error });
  }
}

/** `Execution.answer`: builds an answer after the work, its failure marked as such. */
export async function answering<A>(build: () => A | Promise<A>): Promise<A> {
  try {
    return await build();
  } catch (error) {
    throw new UnstorableAnswer(error);
  }
}

/** The value a first call settles with when its answer could not be stored: the engine answers it the refusal. */
export const UNSTORABLE: unique symbol = Symbol("unstorable answer");

/**
 * Lease mode: what is stored in place of `request`'s answer, which could not be: a refusal. Why is logged once per
 * distinct reason, as it is the developer's to fix (a value that is not plain JSON, a `redact` that throws).
 */
export function unstorableSettlement<T>(request: IdempotentRequest, reason: unknown, log: OnceLog): Settlement<T> {
  log(
    `${request.path} ran, but its answer could not be stored, so its key is kept refused (RAN_WITHOUT_ANSWER) and ` +
      `the work is not run again: ${reasonOf(reason)}`,
    reason,
  );
  return { value: UNSTORABLE as T, response: storedRefusal(IdempotencyErrorCode.RAN_WITHOUT_ANSWER) };
}

/**
 * Atomic mode: the refusal that rolls back `request`'s transaction, whose answer could not be stored: thrown from
 * the work, it undoes the work's writes and the claim alike, so nothing is kept and a new action is a new attempt.
 * Why is logged once per distinct reason, as for lease mode.
 */
export function rolledBack(request: IdempotentRequest, reason: unknown, log: OnceLog): IdempotencyError {
  log(
    `${request.path}'s answer could not be stored, so its transaction was rolled back and nothing was kept ` +
      `(ROLLED_BACK): ${reasonOf(reason)}`,
    reason,
  );
  return new IdempotencyError(
    IdempotencyErrorCode.ROLLED_BACK,
    "The request's answer could not be stored, so nothing it did was kept. It fails the same way until the server " +
      "is fixed.",
  );
}

function reasonOf(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}

/** The event a first run that stored its answer reports: executed, or its answer kept refused in its place. */
export function ranType(result: RunResult<unknown>): IdempotencyEventType {
  return !result.replayed && result.value === UNSTORABLE
    ? IdempotencyEventType.RAN_WITHOUT_ANSWER
    : IdempotencyEventType.EXECUTED;
}
