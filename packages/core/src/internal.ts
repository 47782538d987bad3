/**
 * What idemkit's own packages share and apps should not import: the engine, request fingerprints, key parsing, the
 * one classification of answers and the client's retry maths. Names and signatures here may change in any release.
 */
export type {
  Execution,
  IdempotencyEngine,
  IdempotencyEngineOptions,
  IdempotentRequest,
  RunResult,
  Settlement,
} from "./engine.js";
export { createIdempotencyEngine } from "./engine.js";
export type { FingerprintOptions } from "./fingerprint.js";
export { canonicalJson, fingerprint, fingerprintAsync } from "./fingerprint.js";
export { parseIdempotencyKey } from "./key.js";
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
