/**
 * A refusal kept as a key's answer. Once a lease-mode call's work has run, the key must never be released for the
 * work to run again, even when its answer cannot be stored as it is (an adapter cannot serialize it, `redact`
 * throws): the engine then stores this refusal in the answer's place, and every retry with the key is refused the
 * same way. (In atomic mode the work is rolled back instead, and nothing is kept.)
 *
 * It is stored as any answer is (a status and a body), so every store keeps it without knowing it, and it is told
 * from an adapter's answer by a prefix no adapter's JSON body starts with.
 */

import type { IdempotencyError } from "../errors.js";
import { httpStatusOf } from "../http-status.js";
import type { StoredResponse } from "../store.js";
import { KEPT_REFUSAL_CODE, keptRefusal } from "./phases.js";

const PREFIX = "idemkit:refused:";

/** The answer stored for a key whose work ran but whose own answer could not be stored. */
export function storedRefusal(): StoredResponse {
  return { status: httpStatusOf(KEPT_REFUSAL_CODE), body: PREFIX + JSON.stringify({ code: KEPT_REFUSAL_CODE }) };
}

/**
 * The refusal a stored answer keeps, or undefined for an adapter's own answer. There is one such refusal, so a body
 * altered past reading, or stored under the code's earlier name (RESULT_NOT_STORABLE), is still that refusal.
 */
export function keptRefusalOf(response: StoredResponse): IdempotencyError | undefined {
  return response.body.startsWith(PREFIX) ? keptRefusal() : undefined;
}
