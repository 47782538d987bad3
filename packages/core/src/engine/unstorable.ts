/**
 * Once a call's work has run, nothing that fails afterwards may release its key: the retry would run the work a
 * second time (a charge made twice). What fails afterwards is turning the work's outcome into what is stored: an
 * adapter serializing a value, reading a response's body, the app's `redact`. The adapter builds its answer in
 * `execution.answer(...)`, whose throw is told from the work's own by this wrapper, and the engine's `redact` throws
 * the same. That is a failure of the call's answering phase (`phases.ts`): in lease mode the engine keeps a refusal
 * for the key in the answer's place; in atomic mode the work's writes are still uncommitted, so they are rolled back
 * with the claim, and nothing is kept.
 */
import type { OnceLog } from "../operator-detail.js";
import type { StoredResponse } from "../store.js";
import { storedRefusal } from "./stored-refusal.js";
import type { IdempotentRequest } from "./types.js";

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

/**
 * Lease mode: what is stored in place of `request`'s answer, which could not be: the refusal kept for its key
 * (`stored-refusal.ts`). Why is logged once per distinct reason, as it is the developer's to fix (a value that is
 * not plain JSON, a `redact` that throws).
 */
export function keptInstead(request: IdempotentRequest, reason: unknown, log: OnceLog): StoredResponse {
  log(
    `${request.path} ran, but its answer could not be stored, so its key is kept refused (RAN_WITHOUT_ANSWER) and ` +
      `the work is not run again: ${reasonOf(reason)}`,
    reason,
  );
  return storedRefusal();
}

/**
 * Atomic mode: logs why `request`'s answer could not be stored, once per distinct reason, as for lease mode. Its
 * refusal (ROLLED_BACK) is thrown from the work, so it undoes the work's writes and the claim alike: nothing is
 * kept, and a new action is a new attempt.
 */
export function logRolledBack(request: IdempotentRequest, reason: unknown, log: OnceLog): void {
  log(
    `${request.path}'s answer could not be stored, so its transaction was rolled back and nothing was kept ` +
      `(ROLLED_BACK): ${reasonOf(reason)}`,
    reason,
  );
}

function reasonOf(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}
