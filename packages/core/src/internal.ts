/**
 * What idemkit's own packages share and apps should not import: canonical JSON, the one classification of answers
 * and the client's retry maths. Names and signatures here may change in any release; the engine, fingerprints and
 * key parsing are public, in `@idemkit/core`.
 */

export { checkedScope, idempotencyContextOf } from "./context.js";
export { causeChain } from "./errors.js";
export { canonicalJson } from "./fingerprint.js";
export { downstreamKey } from "./key.js";
export type { AnswerSeen } from "./outcome.js";
export { isRetryableAnswer, isStoredStatus } from "./outcome.js";
export type { RetryState } from "./retry.js";
export {
  abortableDelay,
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  newIdempotencyKey,
  nextRetryDelayMs,
  parseRetryAfterMs,
} from "./retry.js";
export { sha256Hex } from "./sha256.js";
export { DEFAULT_WAIT_MS } from "./store.js";
