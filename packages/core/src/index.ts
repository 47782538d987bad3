export type {
  Execution,
  IdempotencyEngine,
  IdempotencyEngineOptions,
  IdempotencyEvent,
  IdempotentRequest,
  RunResult,
  Settlement,
} from "./engine.js";
export { createIdempotencyEngine, IdempotencyEventType, IdempotencyMode } from "./engine.js";
export type { IdempotencyErrorOptions } from "./errors.js";
export {
  IdempotencyError,
  IdempotencyErrorCode,
  isIdempotencyError,
  isProcedureTransactionError,
  isRetryableCode,
  ProcedureTransactionError,
} from "./errors.js";
export type { FingerprintOptions } from "./fingerprint.js";
export { canonicalJson, fingerprint, fingerprintAsync } from "./fingerprint.js";
export {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  MAX_KEY_LENGTH,
  parseIdempotencyKey,
} from "./key.js";
export { memoryStore } from "./memory-store.js";
export type { AnswerSeen } from "./outcome.js";
export { isRetryableAnswer, isStoredStatus } from "./outcome.js";
export type { RetryPolicy, RetryState } from "./retry.js";
export {
  abortableDelay,
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  newIdempotencyKey,
  nextRetryDelayMs,
  parseRetryAfterMs,
} from "./retry.js";
export { sha256Hex } from "./sha256.js";
export type {
  AtomicCapability,
  AtomicSession,
  ClaimRequest,
  ClaimResult,
  IdempotencyStore,
  RecordId,
  StoredRecord,
  StoredResponse,
} from "./store.js";
export { isPurgeable, RecordState, replacement } from "./store.js";
