/**
 * A refusal kept as a key's answer. Once a lease-mode call's work has run, the key must never be released for the
 * work to run again, even when its answer cannot be stored as it is (an adapter cannot serialize it, `redact`
 * throws): the engine then stores this refusal in the answer's place, and every retry with the key is refused the
 * same way. (In atomic mode the work is rolled back instead, and nothing is kept.)
 *
 * It is stored as any answer is (a status and a body), so every store keeps it without knowing it, and it is told
 * from an adapter's answer by a prefix no adapter's JSON body starts with.
 */
import { IdempotencyError, IdempotencyErrorCode } from "./errors.js";
import { httpStatusOf } from "./http-status.js";
import type { StoredResponse } from "./store.js";

const PREFIX = "idemkit:refused:";

/** The codes a key can be kept refused with. */
type KeptCode = typeof IdempotencyErrorCode.RAN_WITHOUT_ANSWER;

const MESSAGES: Record<KeptCode, string> = {
  [IdempotencyErrorCode.RAN_WITHOUT_ANSWER]:
    "The request ran, but its answer could not be kept; sending it again with this Idempotency-Key gets this " +
    "answer and does not run it again.",
};

/** The answer stored for a key whose work ran but whose own answer could not be stored. */
export function storedRefusal(code: KeptCode): StoredResponse {
  return { status: httpStatusOf(code), body: PREFIX + JSON.stringify({ code }) };
}

/** The refusal a key kept refused answers with. */
export function refusalKept(code: KeptCode): IdempotencyError {
  return new IdempotencyError(code, MESSAGES[code]);
}

/** The refusal a stored answer keeps, or undefined for an adapter's own answer. */
export function keptRefusalOf(response: StoredResponse): IdempotencyError | undefined {
  if (!response.body.startsWith(PREFIX)) return undefined;
  return refusalKept(codeOf(response.body.slice(PREFIX.length)));
}

/**
 * The code a kept refusal was stored with; a body altered past reading, or stored under the code's earlier name
 * (RESULT_NOT_STORABLE), is still that refusal, never an answer.
 */
function codeOf(stored: string): KeptCode {
  try {
    const { code } = JSON.parse(stored) as { code?: unknown };
    if (typeof code === "string" && code in MESSAGES) return code as KeptCode;
  } catch {
    // Read as the one refusal there is.
  }
  return IdempotencyErrorCode.RAN_WITHOUT_ANSWER;
}
